// Plans: create, read, update (name/active/metadata only), archive via active=false (SPEC §3).
import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../../db/database.ts';
import { transactionWithRetry } from '../../db/transaction.ts';
import { NotFoundError, ValidationError } from '../../http/errors.ts';
import { defineList, type ListParams, type Page } from '../../http/lists.ts';
import { pickFields } from '../../http/schemas.ts';
import type { Clock } from '../../shared/clock.ts';
import { isIdOf, newId } from '../../shared/ids.ts';
import { mergeMetadata } from '../../http/metadata.ts';
import {
  type CreatePlanInput,
  MAX_INTERVAL_COUNT,
  type Plan,
  PLAN_SORT_FIELDS,
  planSchema,
  type UpdatePlanInput,
} from './plans.schemas.ts';
import type { PlanRow } from '../../db/tables/plans.table.ts';
import { checkAttachableTaxRates, parseTaxRateIds } from '../tax-rates/tax-rates.service.ts';
import { compiledQuery, type Param } from '../../db/compiled-queries.ts';
import { type ChargeInputShape, chargeOut, parseCharges, type StoredCharge, storedCharge } from './plans.charges.ts';
import { findMeter } from '../meters/meters.service.ts';

/** A plans row as the API shows it: `active` as a boolean (SQLite stores 1/0), `metadata` parsed. */
export function toPlan(row: PlanRow): Plan {
  return pickFields(planSchema, {
    ...row,
    active: Boolean(row.active),
    tax_rate_ids: parseTaxRateIds(row.tax_rate_ids),
    charges: parseCharges(row.charges).map(chargeOut),
    metadata: JSON.parse(row.metadata),
  });
}

const CURRENCIES = new Set(Intl.supportedValuesOf('currency'));

/**
 * Creates an active plan. Throws 400 `validation_error` for a currency that is not ISO 4217,
 * or an `interval_count` above MAX_INTERVAL_COUNT for its interval (periods of at most
 * three years), for `tax_rate_ids` naming a tax rate that does not exist or is archived
 * (SPEC §14), and for `charges` that cannot bill (SPEC §15: a malformed price — tiers not
 * ascending, the last tier's up_to not null, more than 12 decimals — an unknown meter, a
 * meter charged twice). Charges are stored with the plan, immutable like its price.
 */
export async function createPlan(db: Kysely<Database>, clock: Clock, input: CreatePlanInput): Promise<Plan> {
  if (!CURRENCIES.has(input.currency)) {
    throw new ValidationError(
      `currency must be an ISO 4217 code such as NGN or USD (got "${input.currency}")`,
      'currency',
    );
  }
  const maxCount = MAX_INTERVAL_COUNT[input.interval];
  if ((input.interval_count ?? 1) > maxCount) {
    throw new ValidationError(
      `interval_count must be at most ${maxCount} when interval is ${input.interval} (a billing period is at most three years)`,
      'interval_count',
    );
  }
  await checkAttachableTaxRates(db, input.tax_rate_ids ?? [], 'tax_rate_ids');
  const charges = await checkCharges(db, input.charges ?? []);
  const now = clock.now().toISOString();
  const row: PlanRow = {
    id: newId('plan'),
    name: input.name,
    amount: input.amount,
    currency: input.currency,
    interval: input.interval,
    interval_count: input.interval_count ?? 1,
    trial_period_days: input.trial_period_days ?? 0,
    active: true,
    metadata: JSON.stringify(input.metadata ?? {}),
    tax_rate_ids: JSON.stringify(input.tax_rate_ids ?? []),
    charges: JSON.stringify(charges),
    created_at: now,
    updated_at: now,
  };
  await db.insertInto('plans').values(row).execute();
  return toPlan(row);
}

/**
 * `inputs` as stored charges (SPEC §15), or a 400 `validation_error` naming `charges[i]`:
 * a malformed price (storedCharge), a meter that does not exist, or a meter charged twice.
 */
async function checkCharges(db: Kysely<Database>, inputs: readonly ChargeInputShape[]): Promise<StoredCharge[]> {
  const charges: StoredCharge[] = [];
  const meters = new Set<string>();
  for (const [index, input] of inputs.entries()) {
    const field = `charges[${index}]`;
    const charge = storedCharge(input);
    if (typeof charge === 'string') throw new ValidationError(`${field}: ${charge}`, field);
    if (meters.has(charge.meter_id)) {
      throw new ValidationError(`${field}: meter ${charge.meter_id} is charged twice`, `${field}.meter_id`);
    }
    meters.add(charge.meter_id);
    if ((await findMeter(db, charge.meter_id)) === undefined) {
      throw new ValidationError(`${field}: no meter ${charge.meter_id}`, `${field}.meter_id`);
    }
    charges.push(charge);
  }
  return charges;
}

/** The plan row by id, or undefined (malformed ids included). */
export async function findPlan(db: Kysely<Database> | Transaction<Database>, id: string): Promise<PlanRow | undefined> {
  if (!isIdOf('plan', id)) return undefined;
  return planById.executeTakeFirst(db, { id });
}

/** Plans `ids` in one read, by id (unknown ids absent): the batch form of findPlan. */
export async function findPlans(
  db: Kysely<Database> | Transaction<Database>,
  ids: readonly string[],
): Promise<Map<string, PlanRow>> {
  const valid = [...new Set(ids)].filter((id) => isIdOf('plan', id));
  if (valid.length === 0) return new Map();
  const rows = await db.selectFrom('plans').selectAll().where('id', 'in', valid).execute();
  return new Map(rows.map((row) => [row.id, row]));
}

const planById = compiledQuery((db, param: Param<{ id: string }>) =>
  db.selectFrom('plans').selectAll().where('id', '=', param('id')),
);

/** One plan. Throws 404 `not_found` for unknown or malformed ids. */
export async function getPlan(db: Kysely<Database>, id: string): Promise<Plan> {
  const row = await findPlan(db, id);
  if (!row) throw new NotFoundError('plan', id);
  return toPlan(row);
}

const plansList = defineList({
  from: (db) => db.selectFrom('plans'),
  select: (query) => query.selectAll(),
  sortable: PLAN_SORT_FIELDS,
  map: (rows) => rows.map(toPlan),
});

/** A page of plans, archived ones included. */
export async function listPlans(db: Kysely<Database>, params: ListParams): Promise<Page<Plan>> {
  return plansList.page(db, params);
}

/** At most this many plans are named as charging one meter. */
export const PLANS_CHARGING_MAX = 100;

/**
 * The plans (archived ones included, newest first, at most PLANS_CHARGING_MAX) with a metered
 * charge on meter `meterId` (SPEC §15), for the console's meter page. The JSON text is matched
 * first (a superset: `_` is a LIKE wildcard), then each plan's parsed charges decide.
 */
export async function plansChargingMeter(db: Kysely<Database>, meterId: string): Promise<Plan[]> {
  const rows = await db
    .selectFrom('plans')
    .selectAll()
    .where('charges', 'like', `%"meter_id":"${meterId.replaceAll('%', '')}"%`)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(PLANS_CHARGING_MAX)
    .execute();
  return rows.filter((row) => parseCharges(row.charges).some((charge) => charge.meter_id === meterId)).map(toPlan);
}

/**
 * Changes name, active and/or metadata (metadata merges as for customers). Throws 404 for
 * unknown ids, 400 when merged metadata would exceed 50 keys.
 */
export async function updatePlan(
  db: Kysely<Database>,
  clock: Clock,
  id: string,
  patch: UpdatePlanInput,
): Promise<Plan> {
  return transactionWithRetry(db, async (trx) => {
    const row = await findPlan(trx, id);
    if (!row) throw new NotFoundError('plan', id);
    const current = toPlan(row);
    const next: Plan = {
      ...current,
      name: patch.name ?? current.name,
      active: patch.active ?? current.active,
      metadata: patch.metadata === undefined ? current.metadata : mergeMetadata(current.metadata, patch.metadata),
    };
    if (JSON.stringify(next) === JSON.stringify(current)) return current;
    next.updated_at = clock.now().toISOString();
    await trx
      .updateTable('plans')
      .set({
        name: next.name,
        active: next.active,
        metadata: JSON.stringify(next.metadata),
        updated_at: next.updated_at,
      })
      .where('id', '=', id)
      .execute();
    return next;
  });
}
