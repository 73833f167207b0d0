// Row shapes of `meters`, `usage_events`, `usage_event_keys`, the rollups (per minute, hour
// and day) and the distinct values of unique_count meters (per hour and day) (SPEC §15),
// owned by src/modules/usage. Decimal columns are exact: NUMERIC on PostgreSQL (read as
// text), canonical decimal text on SQLite.
import type { Selectable } from 'kysely';

export const METER_AGGREGATIONS = ['count', 'sum', 'max', 'unique_count', 'last'] as const;
export type MeterAggregation = (typeof METER_AGGREGATIONS)[number];
export const LATE_EVENT_POLICIES = ['bill_next_invoice', 'drop'] as const;
export type LateEventPolicy = (typeof LATE_EVENT_POLICIES)[number];

export interface MetersTable {
  /** `meter_…`. */
  id: string;
  /** The `event_name` of the usage events this meter counts; unique among meters. */
  event_name: string;
  aggregation: MeterAggregation;
  /** The property read as a decimal (sum, max, last); null otherwise. */
  value_property: string | null;
  /** The property whose distinct values are counted (unique_count); null otherwise. */
  unique_property: string | null;
  display_name: string;
  late_events: LateEventPolicy;
  created_at: string;
  updated_at: string;
}

export interface UsageEventsTable {
  /** `uev_…`. */
  id: string;
  customer_id: string;
  meter_id: string;
  event_name: string;
  /** The client's key: unique per customer (usage_event_keys). */
  transaction_id: string;
  /** When the usage happened (the client's, in the customer's clock time), ISO 8601. */
  timestamp: string;
  /** When this service accepted it (the customer's clock): finds late events. */
  received_at: string;
  /** The meter's property as read: a canonical decimal, the distinct key, or null (count). */
  value: string | null;
  /** JSON text of the event's properties object. */
  properties: string;
}

export interface UsageEventKeysTable {
  customer_id: string;
  transaction_id: string;
  received_at: string;
}

/** `usage_rollups` (per minute), `usage_rollups_hourly` and `usage_rollups_daily`. */
export interface UsageRollupsTable {
  customer_id: string;
  meter_id: string;
  /** The UTC minute, hour or day (ISO 8601), by table. */
  bucket: string;
  /** PostgreSQL's bigint reads as text. */
  event_count: number | string;
  /** Decimal text (sum meters; '0' for the others). */
  value_sum: string;
  value_max: string | null;
  last_timestamp: string;
  last_transaction_id: string;
  last_value: string | null;
}

/** `usage_distinct_hourly` and `usage_distinct_daily`: the values a unique_count meter saw per bucket. */
export interface UsageDistinctTable {
  customer_id: string;
  meter_id: string;
  /** The UTC hour or day (ISO 8601), by table. */
  bucket: string;
  value: string;
}

export type MeterRow = Selectable<MetersTable>;
export type UsageEventRow = Selectable<UsageEventsTable>;
export type UsageRollupRow = Selectable<UsageRollupsTable>;
