// Usage ingestion (SPEC §15): a batch of up to 1,000 events checked one by one — one bad
// event never refuses the others — then every good one stored through the UsageStore,
// committed before the 202 answers, so an accepted event is durable. The requests in flight
// are written together (group commit, usage.group-commit.ts): per group, one read of the
// customers named (by id or external_id, with their test clocks), one of the meters of the
// event names, then ONE appendBatch — one transaction — for all of their events.
import type { Kysely } from 'kysely';
import { isPostgres } from '../../db/column-types.ts';
import type { Database } from '../../db/database.ts';
import type { MeterRow } from '../../db/tables/usage.table.ts';
import type { Clock } from '../../shared/clock.ts';
import { newId } from '../../shared/ids.ts';
import { isStorableTime, parseTimestamp } from '../../shared/timestamps.ts';
import { metersByEventName } from '../meters/meters.service.ts';
import { MAX_FRACTION_DIGITS, MAX_INTEGER_DIGITS, parseDecimal } from './usage.decimal.ts';
import { GroupCommit, type GroupCommitStats } from './usage.group-commit.ts';
import { ensureUsagePartitions } from './usage.partitions.ts';
import { type NewUsageEvent, sqlUsageStore } from './usage.store.ts';

/** Events in one request at most. */
export const MAX_BATCH_EVENTS = 1_000;
/** Events of one group commit at most (the requests in flight written together). */
export const MAX_GROUP_EVENTS = 5_000;
/** How old an event's timestamp may be, by the customer's clock (SPEC §15). */
export const MAX_EVENT_AGE_MS = 35 * 24 * 60 * 60 * 1000;
/** How far ahead of the customer's clock an event's timestamp may be (SPEC §15). */
export const MAX_EVENT_LEAD_MS = 5 * 60 * 1000;
/** Longest transaction_id, customer_id, event_name and unique property value. */
export const MAX_KEY_LENGTH = 255;
/** Largest properties object, as JSON text (characters). */
export const MAX_PROPERTIES_LENGTH = 8_192;

/** The per-event error codes of an ingestion result. */
export const USAGE_EVENT_ERROR_CODES = [
  'invalid_event',
  'customer_not_found',
  'meter_not_found',
  'timestamp_too_old',
  'timestamp_in_future',
  'invalid_value',
] as const;
export type UsageEventErrorCode = (typeof USAGE_EVENT_ERROR_CODES)[number];

/** What became of one event of a request, at its index. */
export type IngestResult =
  | { index: number; transaction_id: string; status: 'accepted'; id: string }
  | { index: number; transaction_id: string; status: 'duplicate' }
  | {
      index: number;
      transaction_id: string | null;
      status: 'rejected';
      error: { code: UsageEventErrorCode; message: string };
    };

class EventRefused extends Error {
  readonly code: UsageEventErrorCode;
  constructor(code: UsageEventErrorCode, message: string) {
    super(message);
    this.code = code;
  }
}

interface Shaped {
  transaction_id: string;
  customer: string;
  event_name: string;
  timestampMs: number;
  properties: Record<string, unknown>;
  /** `properties` as JSON text, made once: sized here, stored as is. */
  propertiesJson: string;
}

function key(value: unknown, field: string): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_KEY_LENGTH) {
    throw new EventRefused('invalid_event', `${field} must be a string of 1 to ${MAX_KEY_LENGTH} characters`);
  }
  if (value.includes('\u0000')) throw new EventRefused('invalid_event', `${field} must not contain the NUL character`);
  return value;
}

/** The event's fields checked for type and size (no database needed). */
function shapeOf(raw: unknown): Shaped {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
    throw new EventRefused('invalid_event', 'an event must be a JSON object');
  }
  const event = raw as Record<string, unknown>;
  const transaction_id = key(event.transaction_id, 'transaction_id');
  const customer = key(event.customer_id, 'customer_id');
  const event_name = key(event.event_name, 'event_name');
  const timestampMs = typeof event.timestamp === 'string' ? parseTimestamp(event.timestamp) : Number.NaN;
  if (!isStorableTime(timestampMs)) {
    throw new EventRefused('invalid_event', 'timestamp must be an ISO 8601 date-time such as 2026-01-15T10:00:00Z');
  }
  const properties = event.properties ?? {};
  if (properties === null || typeof properties !== 'object' || Array.isArray(properties)) {
    throw new EventRefused('invalid_event', 'properties must be a JSON object');
  }
  const propertiesJson = JSON.stringify(properties);
  if (propertiesJson.length > MAX_PROPERTIES_LENGTH) {
    throw new EventRefused('invalid_event', `properties must be at most ${MAX_PROPERTIES_LENGTH} characters of JSON`);
  }
  return {
    transaction_id,
    customer,
    event_name,
    timestampMs,
    properties: properties as Record<string, unknown>,
    propertiesJson,
  };
}

/** The meter's reading of `properties`: a canonical decimal, a distinct key, or null (count). */
function valueOf(meter: MeterRow, properties: Record<string, unknown>): string | null {
  if (meter.aggregation === 'count') return null;
  if (meter.aggregation === 'unique_count') {
    const property = meter.unique_property!;
    const value = Object.hasOwn(properties, property) ? properties[property] : undefined;
    if (typeof value === 'string' && value.length > 0 && value.length <= MAX_KEY_LENGTH) return value;
    if (typeof value === 'number' && Number.isFinite(value)) return String(value);
    throw new EventRefused(
      'invalid_value',
      `properties.${property} must be a string of 1 to ${MAX_KEY_LENGTH} characters or a number (meter ${meter.id} counts its distinct values)`,
    );
  }
  const property = meter.value_property!;
  const value = parseDecimal(Object.hasOwn(properties, property) ? properties[property] : undefined);
  if (value === undefined) {
    throw new EventRefused(
      'invalid_value',
      `properties.${property} must be a decimal number (a JSON number or a string such as "12.5"; at most ${MAX_INTEGER_DIGITS} digits before the point and ${MAX_FRACTION_DIGITS} after, no exponent; a JSON number beyond 2^53 − 1 or with more than 15 significant digits as a string) for meter ${meter.id}`,
    );
  }
  return value;
}

/** A live customer a reference names: its id and its test clock's reached time (ms), if it has one. */
interface FoundCustomer {
  id: string;
  /** The test clock's reached time (SPEC §11), or null: the customer lives in real time. */
  reached: number | null;
}

/**
 * The live customers `refs` name, by id first, else by external_id, each with its test
 * clock's reached time. One read: customers joined to their clocks (a clock deleted
 * meanwhile takes its customers with it: they are not found).
 */
async function findCustomers(db: Kysely<Database>, refs: string[]): Promise<Map<string, FoundCustomer>> {
  const unique = [...new Set(refs)];
  const out = new Map<string, FoundCustomer>();
  if (unique.length === 0) return out;
  const rows = await db
    .selectFrom('customers')
    .leftJoin('test_clocks', 'test_clocks.id', 'customers.test_clock_id')
    .select(['customers.id', 'customers.external_id', 'customers.test_clock_id', 'test_clocks.reached_time'])
    .where('customers.deleted_at', 'is', null)
    .where((eb) => eb.or([eb('customers.id', 'in', unique), eb('customers.external_id', 'in', unique)]))
    .execute();
  const byId = new Map<string, FoundCustomer>();
  const byExternal = new Map<string, FoundCustomer>();
  for (const row of rows) {
    if (row.test_clock_id !== null && row.reached_time === null) continue;
    const found = { id: row.id, reached: row.reached_time === null ? null : Date.parse(row.reached_time) };
    byId.set(row.id, found);
    if (row.external_id !== null) byExternal.set(row.external_id, found);
  }
  for (const ref of unique) {
    const found = byId.get(ref) ?? byExternal.get(ref);
    if (found) out.set(ref, found);
  }
  return out;
}

/** One request's events that passed shapeOf, waiting for their group (usage.group-commit.ts). */
interface Pending {
  clock: Clock;
  events: Shaped[];
}

/** What became of one event of a Pending. */
type Outcome =
  { status: 'accepted'; id: string } | { status: 'duplicate' } | { status: 'rejected'; error: EventRefused };

/**
 * Runs the requests of a group together: one read of their customers and one of their
 * meters, each event checked against them, then every good event of every request in ONE
 * appendBatch (one transaction, committed when it returns). One list of outcomes per
 * request, in order.
 */
async function runGroup(db: Kysely<Database>, items: Pending[]): Promise<Outcome[][]> {
  const all = items.flatMap((item) => item.events);
  const [customers, meters] = await Promise.all([
    findCustomers(
      db,
      all.map((s) => s.customer),
    ),
    metersByEventName(
      db,
      all.map((s) => s.event_name),
    ),
  ]);
  const outcomes: Outcome[][] = items.map(() => []);
  const batch: NewUsageEvent[] = [];
  const slots: [item: number, event: number][] = [];
  // `received_at` text, made once per instant.
  const isoOf = new Map<number, string>();
  const iso = (ms: number) => {
    let text = isoOf.get(ms);
    if (text === undefined) isoOf.set(ms, (text = new Date(ms).toISOString()));
    return text;
  };
  items.forEach((item, k) => {
    const realNow = item.clock.now().getTime();
    item.events.forEach((s, i) => {
      try {
        const customer = customers.get(s.customer);
        if (!customer) throw new EventRefused('customer_not_found', `no customer has id or external_id ${s.customer}`);
        const meter = meters.get(s.event_name);
        if (!meter) throw new EventRefused('meter_not_found', `no meter counts event_name ${s.event_name}`);
        const now = customer.reached ?? realNow;
        if (s.timestampMs < now - MAX_EVENT_AGE_MS) {
          throw new EventRefused('timestamp_too_old', "timestamp is more than 35 days before the customer's clock");
        }
        if (s.timestampMs > now + MAX_EVENT_LEAD_MS) {
          throw new EventRefused(
            'timestamp_in_future',
            "timestamp is more than 5 minutes ahead of the customer's clock",
          );
        }
        batch.push({
          id: newId('usageEvent'),
          customer_id: customer.id,
          meter_id: meter.id,
          event_name: s.event_name,
          transaction_id: s.transaction_id,
          timestamp: new Date(s.timestampMs).toISOString(),
          received_at: iso(now),
          value: valueOf(meter, s.properties),
          properties: s.propertiesJson,
        });
        slots.push([k, i]);
      } catch (error) {
        if (!(error instanceof EventRefused)) throw error;
        outcomes[k]![i] = { status: 'rejected', error };
      }
    });
  });
  if (batch.length > 0) {
    await ensureUsagePartitions(
      db,
      batch.map((e) => e.timestamp),
    );
    const appended = await sqlUsageStore.appendBatch(db, batch);
    appended.forEach((status, j) => {
      const [k, i] = slots[j]!;
      outcomes[k]![i] = status === 'accepted' ? { status, id: batch[j]!.id } : { status };
    });
  }
  return outcomes;
}

/** The group commit of each database handle. */
const groups = new WeakMap<Kysely<Database>, GroupCommit<Pending, Outcome[]>>();

function groupCommitOf(db: Kysely<Database>): GroupCommit<Pending, Outcome[]> {
  let group = groups.get(db);
  if (!group) {
    group = new GroupCommit({
      run: (items) => runGroup(db, items),
      // SQLite has one writer; on PostgreSQL a second group's round trip overlaps the first's.
      maxInFlight: isPostgres(db) ? 2 : 1,
      weight: (item) => item.events.length,
      maxWeight: MAX_GROUP_EVENTS,
    });
    groups.set(db, group);
  }
  return group;
}

/** How ingestion on `db` has grouped requests so far: groups, requests, events (tests, benches). */
export function ingestionGroupStats(db: Kysely<Database>): GroupCommitStats {
  return groupCommitOf(db).stats();
}

/**
 * Ingests `events` (each as the client sent it, unvalidated; at most MAX_BATCH_EVENTS: the
 * route refuses more): one IngestResult per event, in order. `accepted`: stored now, with
 * its new `uev_…` id; `duplicate`: its (customer, transaction_id) was stored before (or
 * earlier in this request, or by a request committed in the same group) and is not counted
 * again; `rejected`: with a code of USAGE_EVENT_ERROR_CODES and a message — a malformed
 * field, an unknown customer (id or external_id) or event_name (no meter counts it), a
 * timestamp more than 35 days old or more than 5 minutes ahead of the customer's clock (SPEC
 * §15), or a property the meter cannot read. The request is written together with the others
 * in flight (group commit, usage.group-commit.ts); every accepted event is committed when
 * this returns. `received_at` is the customer's clock time (a test clock's, SPEC §11), so
 * late events compare with its invoices.
 */
export async function ingestUsageEvents(
  db: Kysely<Database>,
  clock: Clock,
  events: readonly unknown[],
): Promise<IngestResult[]> {
  const results: IngestResult[] = new Array(events.length);
  const shaped: Shaped[] = [];
  const shapedIndex: number[] = [];
  events.forEach((raw, index) => {
    try {
      shaped.push(shapeOf(raw));
      shapedIndex.push(index);
    } catch (error) {
      results[index] = refused(index, raw, error);
    }
  });
  if (shaped.length > 0) {
    const outcomes = await groupCommitOf(db).submit({ clock, events: shaped });
    outcomes.forEach((outcome, i) => {
      const index = shapedIndex[i]!;
      const { transaction_id } = shaped[i]!;
      results[index] =
        outcome.status === 'rejected'
          ? refused(index, events[index], outcome.error)
          : outcome.status === 'accepted'
            ? { index, transaction_id, status: 'accepted', id: outcome.id }
            : { index, transaction_id, status: 'duplicate' };
    });
  }
  return results;
}

function refused(index: number, raw: unknown, error: unknown): IngestResult {
  if (!(error instanceof EventRefused)) throw error;
  const tx = (raw as { transaction_id?: unknown } | null)?.transaction_id;
  return {
    index,
    transaction_id: typeof tx === 'string' ? tx : null,
    status: 'rejected',
    error: { code: error.code, message: error.message },
  };
}
