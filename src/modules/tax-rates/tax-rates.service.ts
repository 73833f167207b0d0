// Tax rates (SPEC §14): create, read, list, update (display_name / active / metadata only;
// the percentage and inclusiveness are immutable, like a plan's price), and the two reads
// others need: whether ids may be attached (active) and the rates an invoice applies (any).
// The only writer of `tax_rates`.
import type { Kysely, Transaction } from 'kysely';
import { ConfigError } from '../../config.ts';
import type { Database } from '../../db/database.ts';
import type { TaxRateRow } from '../../db/tables/tax-rates.table.ts';
import { transactionWithRetry } from '../../db/transaction.ts';
import { NotFoundError, ValidationError } from '../../http/errors.ts';
import { defineList, type ListParams, type Page } from '../../http/lists.ts';
import { mergeMetadata } from '../../http/metadata.ts';
import { pickFields } from '../../http/schemas.ts';
import type { Clock } from '../../shared/clock.ts';
import { isIdOf, newId } from '../../shared/ids.ts';
import { e4ToPercentage, percentageToE4 } from './tax-rates.percentage.ts';
import {
  type CreateTaxRateInput,
  TAX_RATE_SORT_FIELDS,
  type TaxRate,
  taxRateSchema,
  type UpdateTaxRateInput,
} from './tax-rates.schemas.ts';

/** A tax_rates row as the API shows it: the percentage in percent, booleans, metadata parsed. */
export function toTaxRate(row: TaxRateRow): TaxRate {
  return pickFields(taxRateSchema, {
    ...row,
    percentage: e4ToPercentage(Number(row.percentage_e4)),
    inclusive: Boolean(row.inclusive),
    active: Boolean(row.active),
    metadata: JSON.parse(row.metadata) as Record<string, string>,
  });
}

const REGIONS = new Intl.DisplayNames(['en'], { type: 'region', fallback: 'none' });

/** True for an ISO 3166-1 alpha-2 code Intl knows (upper case): "DE", "NG"; not "de", "XX". */
export function isCountryCode(code: string): boolean {
  return /^[A-Z]{2}$/.test(code) && REGIONS.of(code) !== undefined;
}

/**
 * Creates a tax rate, active unless `input.active` is false. Throws 400 `validation_error`
 * for a percentage with more than 4 decimals and for a country that is not ISO 3166-1 alpha-2.
 */
export async function createTaxRate(db: Kysely<Database>, clock: Clock, input: CreateTaxRateInput): Promise<TaxRate> {
  const e4 = percentageToE4(input.percentage);
  if (e4 === undefined) {
    throw new ValidationError(
      `percentage must be between 0 and 100 with at most 4 decimals (got ${input.percentage})`,
      'percentage',
    );
  }
  if (input.country !== undefined && !isCountryCode(input.country)) {
    throw new ValidationError(
      `country must be an ISO 3166-1 alpha-2 code such as DE or NG (got "${input.country}")`,
      'country',
    );
  }
  const now = clock.now().toISOString();
  const row: TaxRateRow = {
    id: newId('taxRate'),
    display_name: input.display_name,
    percentage_e4: e4,
    inclusive: input.inclusive,
    country: input.country ?? null,
    state: input.state ?? null,
    jurisdiction: input.jurisdiction ?? null,
    active: input.active ?? true,
    metadata: JSON.stringify(input.metadata ?? {}),
    created_at: now,
    updated_at: now,
  };
  await db.insertInto('tax_rates').values(row).execute();
  return toTaxRate(row);
}

/** The tax rate row by id, or undefined (malformed ids included). */
async function findTaxRate(db: Kysely<Database> | Transaction<Database>, id: string): Promise<TaxRateRow | undefined> {
  if (!isIdOf('taxRate', id)) return undefined;
  return db.selectFrom('tax_rates').selectAll().where('id', '=', id).executeTakeFirst();
}

/** One tax rate. Throws 404 `not_found` for unknown or malformed ids. */
export async function getTaxRate(db: Kysely<Database>, id: string): Promise<TaxRate> {
  const row = await findTaxRate(db, id);
  if (!row) throw new NotFoundError('tax rate', id);
  return toTaxRate(row);
}

const taxRatesList = defineList({
  from: (db) => db.selectFrom('tax_rates'),
  select: (query) => query.selectAll(),
  sortable: TAX_RATE_SORT_FIELDS,
  map: (rows) => rows.map(toTaxRate),
});

/** Filters of the tax rate list: exact matches. */
export interface TaxRateFilters {
  active?: boolean;
  inclusive?: boolean;
}

/** A page of tax rates, archived ones included unless `filters.active` says otherwise. */
export async function listTaxRates(
  db: Kysely<Database>,
  params: ListParams,
  filters: TaxRateFilters = {},
): Promise<Page<TaxRate>> {
  // 1/0: SQLite stores booleans so, and PostgreSQL reads the bound '1'/'0' as a boolean.
  const flag = (value: boolean | undefined) => (value === undefined ? undefined : value ? 1 : 0);
  return taxRatesList.page(db, params, { active: flag(filters.active), inclusive: flag(filters.inclusive) });
}

/**
 * Changes display_name, active and/or metadata (metadata merges as for customers). Throws
 * 404 for unknown ids, 400 when merged metadata would exceed 50 keys.
 */
export async function updateTaxRate(
  db: Kysely<Database>,
  clock: Clock,
  id: string,
  patch: UpdateTaxRateInput,
): Promise<TaxRate> {
  return transactionWithRetry(db, async (trx) => {
    const row = await findTaxRate(trx, id);
    if (!row) throw new NotFoundError('tax rate', id);
    const current = toTaxRate(row);
    const next: TaxRate = {
      ...current,
      display_name: patch.display_name ?? current.display_name,
      active: patch.active ?? current.active,
      metadata: patch.metadata === undefined ? current.metadata : mergeMetadata(current.metadata, patch.metadata),
    };
    if (JSON.stringify(next) === JSON.stringify(current)) return current;
    next.updated_at = clock.now().toISOString();
    await trx
      .updateTable('tax_rates')
      .set({
        display_name: next.display_name,
        active: next.active,
        metadata: JSON.stringify(next.metadata),
        updated_at: next.updated_at,
      })
      .where('id', '=', id)
      .execute();
    return next;
  });
}

/**
 * Checks that `ids` may be attached to a subscription, plan or customer (SPEC §14): each
 * exists and is active — or is in `attached` already (an archived rate keeps applying where
 * it was attached, as Stripe's do, so sending the list back unchanged is accepted). Throws
 * 400 `validation_error` on `field` naming the first id that fails.
 */
export async function checkAttachableTaxRates(
  db: Kysely<Database> | Transaction<Database>,
  ids: readonly string[],
  field: string,
  attached: readonly string[] = [],
): Promise<void> {
  if (ids.length === 0) return;
  const valid = ids.filter((id) => isIdOf('taxRate', id));
  const rows =
    valid.length === 0
      ? []
      : await db.selectFrom('tax_rates').select(['id', 'active']).where('id', 'in', valid).execute();
  const found = new Map(rows.map((row) => [row.id, Boolean(row.active)]));
  for (const id of ids) {
    const active = found.get(id);
    if (active === undefined) throw new ValidationError(`${field}: tax rate ${id} does not exist`, field);
    if (!active && !attached.includes(id)) {
      throw new ValidationError(`${field}: tax rate ${id} is archived and cannot be newly attached`, field);
    }
  }
}

/**
 * The rows of the tax rates `ids`, in the order of `ids`, archived or not (what an invoice
 * applies); ids with no row (malformed, or a DEFAULT_TAX_RATE_IDS entry never created) are
 * left out.
 */
export async function findTaxRatesForInvoice(
  db: Kysely<Database> | Transaction<Database>,
  ids: readonly string[],
): Promise<TaxRateRow[]> {
  const valid = ids.filter((id) => isIdOf('taxRate', id));
  if (valid.length === 0) return [];
  const rows = await db.selectFrom('tax_rates').selectAll().where('id', 'in', valid).execute();
  const byId = new Map(rows.map((row) => [row.id, row]));
  return valid.flatMap((id) => byId.get(id) ?? []);
}

/**
 * Checks DEFAULT_TAX_RATE_IDS (`ids`) against the database at startup (SPEC §14): a mistyped or
 * never-created id would otherwise be left out of every invoice silently. Throws ConfigError
 * naming every id with no tax rate. An archived rate passes: it keeps applying where it is
 * named already, as on a plan or a customer.
 */
export async function checkDefaultTaxRates(db: Kysely<Database>, ids: readonly string[]): Promise<void> {
  const found = new Set((await findTaxRatesForInvoice(db, ids)).map((row) => row.id));
  const missing = ids.filter((id) => !found.has(id));
  if (missing.length === 0) return;
  throw new ConfigError(
    'DEFAULT_TAX_RATE_IDS',
    `names ${missing.join(', ')}: no such tax rate in this database. Create the rate (POST /api/tax-rates) and list the id it answers, or leave the id out`,
  );
}

/** A JSON array of ids (a `tax_rate_ids` column) as an array; '[]' without parsing. */
export function parseTaxRateIds(text: string): string[] {
  return text === '[]' ? [] : (JSON.parse(text) as string[]);
}
