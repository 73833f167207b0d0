// Promotion codes (SPEC §14): customer-facing codes for a coupon — create, read, list
// (filters code, coupon, active), update (active, metadata) — and their redemption counter.
// A code is unique among active codes, compared in lower case (a partial unique index).
import { type Kysely, sql, type Transaction } from 'kysely';
import type { Database } from '../../db/database.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import { transactionWithRetry } from '../../db/transaction.ts';
import { NotFoundError, ValidationError } from '../../http/errors.ts';
import { defineList, type ListParams, type Page } from '../../http/lists.ts';
import { mergeMetadata } from '../../http/metadata.ts';
import { pickFields } from '../../http/schemas.ts';
import type { Clock } from '../../shared/clock.ts';
import { isIdOf, newId } from '../../shared/ids.ts';
import type { PromotionCodeRow } from '../../db/tables/coupons.table.ts';
import { emitEvent } from '../events/events.service.ts';
import {
  type CreatePromotionCodeInput,
  PROMOTION_CODE_PATTERN,
  PROMOTION_CODE_SORT_FIELDS,
  type PromotionCode,
  promotionCodeSchema,
  type UpdatePromotionCodeInput,
} from './coupons.schemas.ts';
import { codeTaken, findCoupon } from './coupons.service.ts';

const CURRENCIES = new Set(Intl.supportedValuesOf('currency'));

/** A promotion_codes row as the API shows it: booleans from SQLite's 1/0, restrictions grouped. */
export function toPromotionCode(row: PromotionCodeRow): PromotionCode {
  return pickFields(promotionCodeSchema, {
    ...row,
    active: Boolean(row.active),
    times_redeemed: Number(row.times_redeemed),
    restrictions: {
      first_time_transaction: Boolean(row.first_time_transaction),
      minimum_amount: row.minimum_amount === null ? null : Number(row.minimum_amount),
      minimum_amount_currency: row.minimum_amount_currency,
    },
    metadata: JSON.parse(row.metadata) as Record<string, string>,
  });
}

/** Runs `work` in a transaction, turning the active-code unique violation (a race) into 409. */
async function withCodeGuard<T>(db: Kysely<Database>, code: string, work: (trx: Transaction<Database>) => Promise<T>) {
  try {
    return await transactionWithRetry(db, work);
  } catch (error) {
    if (isUniqueViolation(error)) throw codeTaken(code);
    throw error;
  }
}

/** The active promotion code whose code equals `normalized` (lower case), if any. */
async function findActiveByCode(db: Kysely<Database> | Transaction<Database>, normalized: string) {
  return db
    .selectFrom('promotion_codes')
    .selectAll()
    .where('code_normalized', '=', normalized)
    .where(sql<boolean>`active`)
    .executeTakeFirst();
}

/**
 * Creates a promotion code for `input.coupon` (active unless `active: false`) and emits
 * `promotion_code.created`. Throws 400 `validation_error` for a code outside
 * PROMOTION_CODE_PATTERN (3–40 letters, digits, `-`, `_`), an unknown or deleted coupon,
 * expires_at not in the future, minimum_amount without an ISO 4217 minimum_amount_currency
 * (or the reverse); 409 `conflict` when an active code already has it (compared without case).
 */
export async function createPromotionCode(
  db: Kysely<Database>,
  clock: Clock,
  input: CreatePromotionCodeInput,
): Promise<PromotionCode> {
  if (!PROMOTION_CODE_PATTERN.test(input.code)) {
    throw new ValidationError('code must be 3 to 40 letters, digits, "-" or "_"', 'code');
  }
  const now = clock.now();
  if (input.expires_at !== undefined && Date.parse(input.expires_at) <= now.getTime()) {
    throw new ValidationError('expires_at must be in the future', 'expires_at');
  }
  const restrictions = input.restrictions ?? {};
  const minimum = restrictions.minimum_amount;
  const minimumCurrency = restrictions.minimum_amount_currency;
  if ((minimum === undefined) !== (minimumCurrency === undefined)) {
    throw new ValidationError('minimum_amount and minimum_amount_currency go together', 'restrictions');
  }
  if (minimumCurrency !== undefined && !CURRENCIES.has(minimumCurrency)) {
    throw new ValidationError(
      `minimum_amount_currency must be an ISO 4217 code (got "${minimumCurrency}")`,
      'restrictions',
    );
  }
  const row: PromotionCodeRow = {
    id: newId('promotionCode'),
    code: input.code,
    code_normalized: input.code.toLowerCase(),
    coupon_id: input.coupon,
    max_redemptions: input.max_redemptions ?? null,
    expires_at: input.expires_at === undefined ? null : new Date(input.expires_at).toISOString(),
    first_time_transaction: restrictions.first_time_transaction ?? false,
    minimum_amount: minimum ?? null,
    minimum_amount_currency: minimumCurrency ?? null,
    active: input.active ?? true,
    times_redeemed: 0,
    metadata: JSON.stringify(input.metadata ?? {}),
    created_at: now.toISOString(),
    updated_at: now.toISOString(),
  };
  const promotionCode = toPromotionCode(row);
  await withCodeGuard(db, input.code, async (trx) => {
    const coupon = await findCoupon(trx, input.coupon);
    if (!coupon) throw new ValidationError(`coupon ${input.coupon} does not exist`, 'coupon');
    if (coupon.deleted_at !== null) throw new ValidationError(`coupon ${input.coupon} is deleted`, 'coupon');
    if (row.active && (await findActiveByCode(trx, row.code_normalized))) throw codeTaken(input.code);
    await trx.insertInto('promotion_codes').values(row).execute();
    await emitEvent(trx, clock, 'promotion_code.created', promotionCode);
  });
  return promotionCode;
}

/** The promotion_codes row by id, or undefined (malformed ids included). */
export async function findPromotionCode(
  db: Kysely<Database> | Transaction<Database>,
  id: string,
): Promise<PromotionCodeRow | undefined> {
  if (!isIdOf('promotionCode', id)) return undefined;
  return db.selectFrom('promotion_codes').selectAll().where('id', '=', id).executeTakeFirst();
}

/** One promotion code. Throws 404 `not_found` for unknown or malformed ids. */
export async function getPromotionCode(db: Kysely<Database>, id: string): Promise<PromotionCode> {
  const row = await findPromotionCode(db, id);
  if (!row) throw new NotFoundError('promotion code', id);
  return toPromotionCode(row);
}

const promotionCodesList = defineList({
  from: (db) => db.selectFrom('promotion_codes'),
  select: (query) => query.selectAll(),
  sortable: PROMOTION_CODE_SORT_FIELDS,
  map: (rows) => rows.map((row) => toPromotionCode(row as PromotionCodeRow)),
});

export interface PromotionCodeFilters {
  /** Compared without case. */
  code?: string;
  coupon?: string;
  active?: boolean;
}

/** A page of promotion codes, optionally of one code (without case), one coupon, active or not. */
export async function listPromotionCodes(
  db: Kysely<Database>,
  params: ListParams,
  filters: PromotionCodeFilters,
): Promise<Page<PromotionCode>> {
  return promotionCodesList.page(db, params, {
    code_normalized: filters.code?.toLowerCase(),
    coupon_id: filters.coupon,
    // 1/0 is what both databases compare a boolean column with as a bound value.
    active: filters.active === undefined ? undefined : filters.active ? 1 : 0,
  });
}

/**
 * Changes `active` and/or `metadata` and emits `promotion_code.updated` when anything changed.
 * Throws 404 for unknown ids; 409 `conflict` when reactivating a code another active promotion
 * code has meanwhile; 400 past 50 metadata keys.
 */
export async function updatePromotionCode(
  db: Kysely<Database>,
  clock: Clock,
  id: string,
  patch: UpdatePromotionCodeInput,
): Promise<PromotionCode> {
  const existing = await findPromotionCode(db, id);
  if (!existing) throw new NotFoundError('promotion code', id);
  return withCodeGuard(db, existing.code, async (trx) => {
    const row = await findPromotionCode(trx, id);
    if (!row) throw new NotFoundError('promotion code', id);
    const current = toPromotionCode(row);
    const active = patch.active ?? current.active;
    const metadata = patch.metadata === undefined ? current.metadata : mergeMetadata(current.metadata, patch.metadata);
    if (active === current.active && JSON.stringify(metadata) === JSON.stringify(current.metadata)) return current;
    if (active && !current.active) {
      const holder = await findActiveByCode(trx, row.code_normalized);
      if (holder && holder.id !== id) throw codeTaken(row.code);
    }
    const next: PromotionCodeRow = {
      ...row,
      active,
      metadata: JSON.stringify(metadata),
      updated_at: clock.now().toISOString(),
    };
    await trx
      .updateTable('promotion_codes')
      .set({ active, metadata: next.metadata, updated_at: next.updated_at })
      .where('id', '=', id)
      .execute();
    const promotionCode = toPromotionCode(next);
    await emitEvent(trx, clock, 'promotion_code.updated', promotionCode);
    return promotionCode;
  });
}

/**
 * The promotion code a request names — its id (`promo_…`) or the code itself, compared without
 * case among active codes — or undefined when none matches.
 */
export async function findPromotionCodeByReference(
  db: Kysely<Database> | Transaction<Database>,
  reference: string,
): Promise<PromotionCodeRow | undefined> {
  if (isIdOf('promotionCode', reference)) return findPromotionCode(db, reference);
  if (!PROMOTION_CODE_PATTERN.test(reference)) return undefined;
  return findActiveByCode(db, reference.toLowerCase());
}

/** Why promotion code `row` cannot be redeemed at `now` (inactive, expired, exhausted), or null. */
export function promotionCodeRefusal(row: PromotionCodeRow, now: Date): string | null {
  if (!row.active) return 'it is not active';
  if (row.expires_at !== null && Date.parse(row.expires_at) <= now.getTime()) return `it expired at ${row.expires_at}`;
  if (row.max_redemptions !== null && Number(row.times_redeemed) >= row.max_redemptions) {
    return `it has reached its max_redemptions (${row.max_redemptions})`;
  }
  return null;
}

/**
 * Counts one redemption of promotion code `row` at `now` in `trx`, as redeemCoupon does for
 * coupons: one conditional UPDATE, so `max_redemptions` holds under concurrency. Throws 400
 * `validation_error` (field `promotion_code`) saying why it cannot be redeemed.
 */
export async function redeemPromotionCode(trx: Transaction<Database>, row: PromotionCodeRow, now: Date): Promise<void> {
  const at = now.toISOString();
  const result = await trx
    .updateTable('promotion_codes')
    .set({ times_redeemed: sql`times_redeemed + 1` })
    .where('id', '=', row.id)
    .where(sql<boolean>`active`)
    .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', at)]))
    .where((eb) => eb.or([eb('max_redemptions', 'is', null), eb('times_redeemed', '<', eb.ref('max_redemptions'))]))
    .executeTakeFirst();
  if (Number(result.numUpdatedRows) > 0) return;
  const latest = (await findPromotionCode(trx, row.id)) ?? row;
  const why = promotionCodeRefusal(latest, now) ?? 'it is not valid';
  throw new ValidationError(`promotion code ${row.code} cannot be redeemed: ${why}`, 'promotion_code');
}
