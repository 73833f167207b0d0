// Meters (SPEC §15): create, read, list, rename. How a meter aggregates — its event_name,
// aggregation, properties and late-event policy — is fixed at creation, like a plan's price:
// usage already stored was read by it. The only writer of `meters`.
import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../../db/database.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import type { MeterRow } from '../../db/tables/usage.table.ts';
import { AppError, NotFoundError, ValidationError } from '../../http/errors.ts';
import { defineList, type ListParams, type Page } from '../../http/lists.ts';
import { pickFields } from '../../http/schemas.ts';
import type { Clock } from '../../shared/clock.ts';
import { isIdOf, newId } from '../../shared/ids.ts';
import {
  type CreateMeterInput,
  METER_SORT_FIELDS,
  type Meter,
  meterSchema,
  type UpdateMeterInput,
} from './meters.schemas.ts';

type Db = Kysely<Database> | Transaction<Database>;

/** A meters row as the API shows it. */
export function toMeter(row: MeterRow): Meter {
  return pickFields(meterSchema, row);
}

const NEEDS_VALUE = new Set(['sum', 'max', 'last']);

/**
 * Creates a meter. Throws 400 `validation_error` when `value_property` is missing for sum,
 * max or last (or given for another aggregation), likewise `unique_property` for
 * unique_count; 409 `conflict` when a meter already counts `event_name` (SPEC §15).
 */
export async function createMeter(db: Kysely<Database>, clock: Clock, input: CreateMeterInput): Promise<Meter> {
  const needsValue = NEEDS_VALUE.has(input.aggregation);
  const needsUnique = input.aggregation === 'unique_count';
  if (needsValue !== (input.value_property !== undefined)) {
    throw new ValidationError(
      needsValue
        ? `value_property is required for aggregation ${input.aggregation}`
        : `value_property applies only to sum, max and last (aggregation is ${input.aggregation})`,
      'value_property',
    );
  }
  if (needsUnique !== (input.unique_property !== undefined)) {
    throw new ValidationError(
      needsUnique
        ? 'unique_property is required for aggregation unique_count'
        : `unique_property applies only to unique_count (aggregation is ${input.aggregation})`,
      'unique_property',
    );
  }
  const now = clock.now().toISOString();
  const row: MeterRow = {
    id: newId('meter'),
    event_name: input.event_name,
    aggregation: input.aggregation,
    value_property: input.value_property ?? null,
    unique_property: input.unique_property ?? null,
    display_name: input.display_name,
    late_events: input.late_events ?? 'bill_next_invoice',
    created_at: now,
    updated_at: now,
  };
  try {
    await db.insertInto('meters').values(row).execute();
  } catch (error) {
    if (isUniqueViolation(error)) {
      throw new AppError('conflict', `a meter for event_name ${input.event_name} already exists`);
    }
    throw error;
  }
  return toMeter(row);
}

/** The meter row by id, or undefined (malformed ids included, without a round trip). */
export async function findMeter(db: Db, id: string): Promise<MeterRow | undefined> {
  if (!isIdOf('meter', id)) return undefined;
  return db.selectFrom('meters').selectAll().where('id', '=', id).executeTakeFirst();
}

/**
 * One meter as the API shows it: `{id, event_name, aggregation, value_property,
 * unique_property, display_name, late_events, created_at, updated_at}`. Throws 404
 * `not_found` for unknown or malformed ids.
 */
export async function getMeter(db: Db, id: string): Promise<Meter> {
  const row = await findMeter(db, id);
  if (!row) throw new NotFoundError('meter', id);
  return toMeter(row);
}

/** The meters counting these event names (the ingestion's one read of meters). */
export async function metersByEventName(db: Db, eventNames: readonly string[]): Promise<Map<string, MeterRow>> {
  if (eventNames.length === 0) return new Map();
  const rows = await db
    .selectFrom('meters')
    .selectAll()
    .where('event_name', 'in', [...new Set(eventNames)])
    .execute();
  return new Map(rows.map((row) => [row.event_name, row]));
}

const metersList = defineList({
  from: (db) => db.selectFrom('meters'),
  select: (query) => query.selectAll(),
  sortable: METER_SORT_FIELDS,
  map: (rows) => rows.map(toMeter),
});

/** A page of meters (SPEC §2 "Lists"); `filters.event_name` keeps the one meter of that name. */
export async function listMeters(
  db: Kysely<Database>,
  params: ListParams,
  filters: { event_name?: string } = {},
): Promise<Page<Meter>> {
  return metersList.page(db, params, { event_name: filters.event_name });
}

/** Renames a meter (`display_name`, the one mutable field). Throws 404 for unknown ids. */
export async function updateMeter(
  db: Kysely<Database>,
  clock: Clock,
  id: string,
  patch: UpdateMeterInput,
): Promise<Meter> {
  const row = await findMeter(db, id);
  if (!row) throw new NotFoundError('meter', id);
  if (patch.display_name === undefined || patch.display_name === row.display_name) return toMeter(row);
  const updated = { ...row, display_name: patch.display_name, updated_at: clock.now().toISOString() };
  await db
    .updateTable('meters')
    .set({ display_name: updated.display_name, updated_at: updated.updated_at })
    .where('id', '=', id)
    .execute();
  return toMeter(updated);
}
