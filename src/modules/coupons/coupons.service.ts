// Coupons (SPEC §14): create, read, list, update (name and metadata), delete (no new
// redemptions; the discounts already made keep applying), and the one redemption counter.
// Each change writes its event in the same transaction.
import { type Kysely, sql, type Transaction } from 'kysely';
import type { Database } from '../../db/database.ts';
import { transactionWithRetry } from '../../db/transaction.ts';
import { AppError, NotFoundError, ValidationError } from '../../http/errors.ts';
import { defineList, type ListParams, type Page } from '../../http/lists.ts';
import { mergeMetadata } from '../../http/metadata.ts';
import { pickFields } from '../../http/schemas.ts';
import type { Clock } from '../../shared/clock.ts';
import { isIdOf, newId } from '../../shared/ids.ts';
import type { CouponRow } from '../../db/tables/coupons.table.ts';
import { emitEvent } from '../events/events.service.ts';
import {
  type Coupon,
  COUPON_SORT_FIELDS,
  couponSchema,
  type CreateCouponInput,
  type UpdateCouponInput,
} from './coupons.schemas.ts';

const CURRENCIES = new Set(Intl.supportedValuesOf('currency'));

/**
 * Why coupon `row` cannot be redeemed at `now`, or null when it can (SPEC §14 `valid`): it
 * is deleted, past its `redeem_by`, or redeemed `max_redemptions` times already.
 */
export function couponRefusal(row: CouponRow, now: Date): string | null {
  if (row.deleted_at !== null) return 'it is deleted';
  if (row.redeem_by !== null && Date.parse(row.redeem_by) <= now.getTime())
    return `its redeem_by (${row.redeem_by}) has passed`;
  if (row.max_redemptions !== null && row.times_redeemed >= row.max_redemptions) {
    return `it has reached its max_redemptions (${row.max_redemptions})`;
  }
  return null;
}

/** A coupons row as the API shows it at `now`: percent_off from hundredths, `valid` computed. */
export function toCoupon(row: CouponRow, now: Date): Coupon {
  return pickFields(couponSchema, {
    ...row,
    percent_off: row.percent_off_bps === null ? null : row.percent_off_bps / 100,
    amount_off: row.amount_off === null ? null : Number(row.amount_off),
    applies_to_plans: row.applies_to_plans === null ? null : (JSON.parse(row.applies_to_plans) as string[]),
    times_redeemed: Number(row.times_redeemed),
    valid: couponRefusal(row, now) === null,
    metadata: JSON.parse(row.metadata) as Record<string, string>,
  });
}

/**
 * `percent` (0 < x ≤ 100) in hundredths of a percent, exactly: 12.5 → 1250. Throws 400 when
 * it has more than 2 decimals (floats such as 12.34 × 100 are within 1e-6 of an integer).
 */
export function percentToBps(percent: number): number {
  const bps = Math.round(percent * 100);
  if (Math.abs(percent * 100 - bps) > 1e-6 || bps < 1 || bps > 10_000) {
    throw new ValidationError(
      `percent_off must be above 0 and at most 100, with at most 2 decimals (got ${percent})`,
      'percent_off',
    );
  }
  return bps;
}

/** Throws 400 naming the field unless `input` describes one coupon SPEC §14 allows. */
async function checkCouponInput(db: Kysely<Database>, input: CreateCouponInput, now: Date): Promise<void> {
  const hasPercent = input.percent_off !== undefined;
  const hasAmount = input.amount_off !== undefined;
  if (hasPercent === hasAmount) {
    throw new ValidationError(
      'a coupon has exactly one of percent_off or amount_off',
      hasPercent ? 'amount_off' : 'percent_off',
    );
  }
  if (hasAmount && input.currency === undefined) throw new ValidationError('amount_off needs a currency', 'currency');
  if (hasPercent && input.currency !== undefined) {
    throw new ValidationError('currency goes with amount_off only: a percent_off applies in any currency', 'currency');
  }
  if (input.currency !== undefined && !CURRENCIES.has(input.currency)) {
    throw new ValidationError(
      `currency must be an ISO 4217 code such as EUR or NGN (got "${input.currency}")`,
      'currency',
    );
  }
  if ((input.duration === 'repeating') !== (input.duration_in_months !== undefined)) {
    throw new ValidationError(
      'duration_in_months is required with duration repeating, and only then',
      'duration_in_months',
    );
  }
  if (input.redeem_by !== undefined && Date.parse(input.redeem_by) <= now.getTime()) {
    throw new ValidationError('redeem_by must be in the future', 'redeem_by');
  }
  const plans = input.applies_to_plans ?? [];
  const found = plans.length === 0 ? [] : await db.selectFrom('plans').select('id').where('id', 'in', plans).execute();
  const missing = plans.find((id) => !found.some((plan) => plan.id === id));
  if (missing !== undefined)
    throw new ValidationError(`applies_to_plans names plan ${missing}, which does not exist`, 'applies_to_plans');
}

/**
 * Creates a coupon and emits `coupon.created`. Throws 400 `validation_error` naming the field
 * for: both or neither of percent_off/amount_off, percent_off with more than 2 decimals,
 * amount_off without an ISO 4217 currency, duration_in_months without `repeating` (or the
 * reverse), redeem_by not in the future, or an unknown plan in applies_to_plans.
 */
export async function createCoupon(db: Kysely<Database>, clock: Clock, input: CreateCouponInput): Promise<Coupon> {
  const now = clock.now();
  const bps = input.percent_off === undefined ? null : percentToBps(input.percent_off);
  await checkCouponInput(db, input, now);
  const row: CouponRow = {
    id: newId('coupon'),
    name: input.name,
    percent_off_bps: bps,
    amount_off: input.amount_off ?? null,
    currency: input.currency ?? null,
    duration: input.duration,
    duration_in_months: input.duration_in_months ?? null,
    max_redemptions: input.max_redemptions ?? null,
    redeem_by: input.redeem_by === undefined ? null : new Date(input.redeem_by).toISOString(),
    applies_to_plans: input.applies_to_plans === undefined ? null : JSON.stringify(input.applies_to_plans),
    times_redeemed: 0,
    metadata: JSON.stringify(input.metadata ?? {}),
    created_at: now.toISOString(),
    updated_at: now.toISOString(),
    deleted_at: null,
  };
  const coupon = toCoupon(row, now);
  await transactionWithRetry(db, async (trx) => {
    await trx.insertInto('coupons').values(row).execute();
    await emitEvent(trx, clock, 'coupon.created', coupon);
  });
  return coupon;
}

/** The coupons row by id, or undefined (malformed ids included). */
export async function findCoupon(
  db: Kysely<Database> | Transaction<Database>,
  id: string,
): Promise<CouponRow | undefined> {
  if (!isIdOf('coupon', id)) return undefined;
  return db.selectFrom('coupons').selectAll().where('id', '=', id).executeTakeFirst();
}

/** One coupon, deleted ones included. Throws 404 `not_found` for unknown or malformed ids. */
export async function getCoupon(db: Kysely<Database>, clock: Clock, id: string): Promise<Coupon> {
  const row = await findCoupon(db, id);
  if (!row) throw new NotFoundError('coupon', id);
  return toCoupon(row, clock.now());
}

const couponsList = defineList({
  from: (db) => db.selectFrom('coupons'),
  select: (query) => query.selectAll(),
  sortable: COUPON_SORT_FIELDS,
  map: (rows) => rows,
});

/** A page of coupons, deleted ones included (their `valid` is false). */
export async function listCoupons(db: Kysely<Database>, clock: Clock, params: ListParams): Promise<Page<Coupon>> {
  const page = await couponsList.page(db, params);
  const now = clock.now();
  return { ...page, data: page.data.map((row) => toCoupon(row as CouponRow, now)) };
}

/**
 * Changes `name` and/or `metadata` (merged as for customers) and emits `coupon.updated` when
 * anything changed. Throws 404 for unknown ids, 400 past 50 metadata keys.
 */
export async function updateCoupon(
  db: Kysely<Database>,
  clock: Clock,
  id: string,
  patch: UpdateCouponInput,
): Promise<Coupon> {
  return transactionWithRetry(db, async (trx) => {
    const row = await findCoupon(trx, id);
    if (!row) throw new NotFoundError('coupon', id);
    const now = clock.now();
    const current = toCoupon(row, now);
    const name = patch.name ?? row.name;
    const metadata = patch.metadata === undefined ? current.metadata : mergeMetadata(current.metadata, patch.metadata);
    if (name === row.name && JSON.stringify(metadata) === JSON.stringify(current.metadata)) return current;
    const next: CouponRow = { ...row, name, metadata: JSON.stringify(metadata), updated_at: now.toISOString() };
    await trx
      .updateTable('coupons')
      .set({ name, metadata: next.metadata, updated_at: next.updated_at })
      .where('id', '=', id)
      .execute();
    const coupon = toCoupon(next, now);
    await emitEvent(trx, clock, 'coupon.updated', coupon);
    return coupon;
  });
}

/**
 * Deletes coupon `id` (Stripe's rule): it takes no new redemptions — nor do its promotion
 * codes — while the discounts made already keep applying. The row stays, `deleted_at` set,
 * for those discounts and their invoices. Emits `coupon.deleted`. Throws 404 for unknown or
 * already deleted coupons.
 */
export async function deleteCoupon(db: Kysely<Database>, clock: Clock, id: string): Promise<void> {
  await transactionWithRetry(db, async (trx) => {
    const row = await findCoupon(trx, id);
    if (!row || row.deleted_at !== null) throw new NotFoundError('coupon', id);
    const now = clock.now();
    const deleted: CouponRow = { ...row, deleted_at: now.toISOString(), updated_at: now.toISOString() };
    await trx
      .updateTable('coupons')
      .set({ deleted_at: deleted.deleted_at, updated_at: deleted.updated_at })
      .where('id', '=', id)
      .execute();
    await emitEvent(trx, clock, 'coupon.deleted', toCoupon(deleted, now));
  });
}

/**
 * Counts one redemption of coupon `id` at `now`, in `trx`: one conditional UPDATE, so on
 * PostgreSQL concurrent redemptions queue on the row and each re-checks the limit against the
 * count the one before it committed — `max_redemptions` holds however many race. Returns the
 * row as redeemed (read after the update: `times_redeemed` counts this one). Throws 400 `validation_error` (field `coupon`) saying why it cannot be
 * redeemed (unknown, deleted, past redeem_by, max_redemptions reached); the caller's
 * transaction then rolls back whatever else it wrote.
 */
export async function redeemCoupon(trx: Transaction<Database>, id: string, now: Date): Promise<CouponRow> {
  const at = now.toISOString();
  const result = isIdOf('coupon', id)
    ? await trx
        .updateTable('coupons')
        .set({ times_redeemed: sql`times_redeemed + 1` })
        .where('id', '=', id)
        .where('deleted_at', 'is', null)
        .where((eb) => eb.or([eb('redeem_by', 'is', null), eb('redeem_by', '>', at)]))
        .where((eb) => eb.or([eb('max_redemptions', 'is', null), eb('times_redeemed', '<', eb.ref('max_redemptions'))]))
        .executeTakeFirst()
    : undefined;
  const row = await findCoupon(trx, id);
  if (!row) throw new ValidationError(`coupon ${id} does not exist`, 'coupon');
  if (result === undefined || Number(result.numUpdatedRows) === 0) {
    throw new ValidationError(
      `coupon ${id} cannot be redeemed: ${couponRefusal(row, now) ?? 'it is not valid'}`,
      'coupon',
    );
  }
  return row;
}

/** 409 `conflict` for a unique code taken by another active promotion code. */
export function codeTaken(code: string): AppError {
  return new AppError('conflict', `an active promotion code ${code} already exists (codes compare without case)`);
}
