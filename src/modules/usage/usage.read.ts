// GET /api/usage-events (SPEC §15): stored usage events, filtered by customer, event_name,
// transaction_id and a time range of their timestamps, in pages (SPEC §2 "Lists").
import type { Kysely } from 'kysely';
import type { Param } from '../../db/compiled-queries.ts';
import type { Database } from '../../db/database.ts';
import type { UsageEventRow } from '../../db/tables/usage.table.ts';
import { ValidationError } from '../../http/errors.ts';
import { defineList, type ListParams, type Page } from '../../http/lists.ts';
import { isStorableTime, MAX_TIMESTAMP, MIN_TIMESTAMP, parseTimestamp } from '../../shared/timestamps.ts';
import { USAGE_EVENT_SORT_FIELDS, type UsageEvent } from './usage.schemas.ts';

/** A usage_events row as the API shows it. */
export function toUsageEvent(row: UsageEventRow): UsageEvent {
  return {
    id: row.id,
    customer_id: row.customer_id,
    meter_id: row.meter_id,
    event_name: row.event_name,
    transaction_id: row.transaction_id,
    timestamp: row.timestamp,
    received_at: row.received_at,
    properties: JSON.parse(row.properties) as Record<string, unknown>,
  };
}

const usageEventsList = defineList({
  // The time range is always bound (the whole storable range by default), so PostgreSQL
  // prunes partitions when it is narrower.
  from: (db, param: Param<{ from: string; to: string }>) =>
    db.selectFrom('usage_events').where('timestamp', '>=', param('from')).where('timestamp', '<', param('to')),
  select: (query) => query.selectAll(),
  sortable: USAGE_EVENT_SORT_FIELDS,
  map: (rows) => rows.map(toUsageEvent),
});

/** Filters of the usage event list: exact matches, and [from, to) on `timestamp` (ISO 8601). */
export interface UsageEventFilters {
  customer_id?: string;
  event_name?: string;
  transaction_id?: string;
  from?: string;
  to?: string;
}

function bound(text: string | undefined, field: string, fallback: string): string {
  if (text === undefined) return fallback;
  const ms = parseTimestamp(text);
  if (!isStorableTime(ms)) throw new ValidationError(`${field} must be an ISO 8601 date-time`, field);
  return new Date(ms).toISOString();
}

/**
 * A page of usage events (sorted by `timestamp` unless `received_at` is asked for; ties by
 * id). Throws 400 `validation_error` when `from` or `to` is not an ISO 8601 date-time.
 */
export async function listUsageEvents(
  db: Kysely<Database>,
  params: ListParams,
  filters: UsageEventFilters = {},
): Promise<Page<UsageEvent>> {
  const from = bound(filters.from, 'from', MIN_TIMESTAMP);
  // MAX_TIMESTAMP is the last storable millisecond: one past it would not be storable text.
  const to = filters.to === undefined ? MAX_TIMESTAMP : bound(filters.to, 'to', MAX_TIMESTAMP);
  return usageEventsList.page(
    db,
    params,
    {
      customer_id: filters.customer_id,
      event_name: filters.event_name,
      transaction_id: filters.transaction_id,
    },
    { from, to },
  );
}
