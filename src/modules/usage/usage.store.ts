// The storage of usage events behind one small interface (SPEC §15 "Scale"): appendBatch
// writes a batch, aggregate reads a meter's value over a time range. This implementation
// is SQL on the app's own database (PostgreSQL partitioned by month, or SQLite); another
// store (Citus, ClickHouse) would implement the same two functions (docs/scaling.md).
//
// appendBatch: the batch's (customer_id, transaction_id) keys go into usage_event_keys in
// ONE multi-row INSERT … ON CONFLICT DO NOTHING RETURNING: the rows returned are the new
// events, the others duplicates (of an earlier batch, a retry, another instance: the key's
// primary key decides, and a concurrent insert of the same key waits for the first to
// commit). The new events then go into usage_events in one INSERT, and their per-minute
// rollups into usage_rollups in one upsert, all in the caller's transaction.
//
// aggregate: the minutes wholly inside [from, to) are read from usage_rollups; the partial
// minutes at either end from the events themselves (an index range). unique_count reads
// the events' distinct values over the range (the index on customer, meter, timestamp):
// distinct values do not add up across minutes.
import { type Kysely, sql, type Transaction } from 'kysely';
import { isPostgres } from '../../db/column-types.ts';
import type { Database } from '../../db/database.ts';
import type { MeterAggregation, UsageEventsTable, UsageRollupsTable } from '../../db/tables/usage.table.ts';
import { addDecimals, canonicalDecimal, maxDecimal } from './usage.decimal.ts';

type Db = Kysely<Database> | Transaction<Database>;

/** One event to store: validated, its customer resolved and its meter's value read. */
export type NewUsageEvent = UsageEventsTable;

/** What became of one event of a batch. */
export type AppendOutcome = 'accepted' | 'duplicate';

/** A meter's value over [from, to) (ISO 8601) for one customer. */
export interface AggregateQuery {
  customer_id: string;
  meter: { id: string; aggregation: MeterAggregation };
  from: string;
  to: string;
}

/** Where usage events are kept and how a period's value is read (SPEC §15). */
export interface UsageStore {
  /**
   * Stores `events` in `trx` (the caller commits): one outcome per event, in order.
   * `duplicate` for an event whose (customer_id, transaction_id) is stored already or appears
   * earlier in the batch: it is not stored again nor counted.
   */
  appendBatch(trx: Transaction<Database>, events: readonly NewUsageEvent[]): Promise<AppendOutcome[]>;
  /** The meter's value over the range as canonical decimal text; "0" when there are no events. */
  aggregate(db: Db, query: AggregateQuery): Promise<string>;
}

const MINUTE_MS = 60_000;

/** The UTC minute `iso` falls in, as ISO 8601 (`…T10:07:00.000Z`). */
export function minuteOf(iso: string): string {
  return new Date(Math.floor(Date.parse(iso) / MINUTE_MS) * MINUTE_MS).toISOString();
}

/**
 * Byte order of UTF-8 text: how SQLite (BINARY) and PostgreSQL (COLLATE "C") compare the
 * transaction ids that break ties between `last` events with the same timestamp.
 */
export function compareBytes(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

/** True when event (t1, x1) comes after (t2, x2): later timestamp, then greater transaction id. */
function later(t1: string, x1: string, t2: string, x2: string): boolean {
  const dt = Date.parse(t1) - Date.parse(t2);
  return dt !== 0 ? dt > 0 : compareBytes(x1, x2) > 0;
}

type Rollup = UsageRollupsTable & { event_count: number };

/** The rollups of `events` (all new), one per customer, meter and minute, sorted by key. */
function rollupsOf(events: readonly NewUsageEvent[]): Rollup[] {
  const byKey = new Map<string, Rollup>();
  for (const event of events) {
    const bucket = minuteOf(event.timestamp);
    const key = `${event.customer_id}\u0000${event.meter_id}\u0000${bucket}`;
    const value = event.value;
    // A unique_count meter's value may be any text: only decimals add up (and only sum, max
    // and last meters read them).
    const numeric = value !== null && /^-?\d+(\.\d+)?$/.test(value) ? value : null;
    const current = byKey.get(key);
    if (!current) {
      byKey.set(key, {
        customer_id: event.customer_id,
        meter_id: event.meter_id,
        bucket,
        event_count: 1,
        value_sum: numeric ?? '0',
        value_max: numeric,
        last_timestamp: event.timestamp,
        last_transaction_id: event.transaction_id,
        last_value: numeric,
      });
      continue;
    }
    current.event_count += 1;
    if (numeric !== null) {
      current.value_sum = addDecimals([current.value_sum, numeric]);
      current.value_max = maxDecimal(current.value_max, numeric);
    }
    if (later(event.timestamp, event.transaction_id, current.last_timestamp, current.last_transaction_id)) {
      current.last_timestamp = event.timestamp;
      current.last_transaction_id = event.transaction_id;
      current.last_value = numeric;
    }
  }
  // One order for every writer: concurrent upserts of the same rows then queue, not deadlock.
  return [...byKey.values()].sort(
    (a, b) =>
      compareBytes(a.customer_id, b.customer_id) ||
      compareBytes(a.meter_id, b.meter_id) ||
      a.bucket.localeCompare(b.bucket),
  );
}

/** `rollup` merged into `stored` (the row already there), as SQLite writes it back. */
function merged(stored: UsageRollupsTable, rollup: Rollup): Rollup {
  const newer = later(
    rollup.last_timestamp,
    rollup.last_transaction_id,
    stored.last_timestamp,
    stored.last_transaction_id,
  );
  return {
    ...rollup,
    event_count: Number(stored.event_count) + rollup.event_count,
    value_sum: addDecimals([stored.value_sum, rollup.value_sum]),
    value_max: maxDecimal(stored.value_max, rollup.value_max),
    last_timestamp: newer ? rollup.last_timestamp : stored.last_timestamp,
    last_transaction_id: newer ? rollup.last_transaction_id : stored.last_transaction_id,
    last_value: newer ? rollup.last_value : stored.last_value,
  };
}

/** PostgreSQL: the rollups added to the stored ones by the database itself (NUMERIC, exact). */
async function upsertRollupsPostgres(trx: Transaction<Database>, rollups: Rollup[]): Promise<void> {
  const newer = sql`(excluded.last_timestamp, excluded.last_transaction_id collate "C") > (usage_rollups.last_timestamp, usage_rollups.last_transaction_id collate "C")`;
  await trx
    .insertInto('usage_rollups')
    .values(rollups)
    .onConflict((oc) =>
      oc.columns(['customer_id', 'meter_id', 'bucket']).doUpdateSet({
        event_count: sql`usage_rollups.event_count + excluded.event_count`,
        value_sum: sql`usage_rollups.value_sum + excluded.value_sum`,
        // greatest() skips nulls.
        value_max: sql`greatest(usage_rollups.value_max, excluded.value_max)`,
        last_value: sql`case when ${newer} then excluded.last_value else usage_rollups.last_value end`,
        last_transaction_id: sql`case when ${newer} then excluded.last_transaction_id else usage_rollups.last_transaction_id end`,
        last_timestamp: sql`case when ${newer} then excluded.last_timestamp else usage_rollups.last_timestamp end`,
      }),
    )
    .execute();
}

/**
 * SQLite: the stored rollups of the batch's keys read, merged in JavaScript (exact decimal
 * text: SQLite's own arithmetic is binary floating point) and written back. Safe: SQLite runs
 * one write transaction at a time.
 */
async function upsertRollupsSqlite(trx: Transaction<Database>, rollups: Rollup[]): Promise<void> {
  const unique = <T>(values: T[]) => [...new Set(values)];
  const stored = await trx
    .selectFrom('usage_rollups')
    .selectAll()
    .where('customer_id', 'in', unique(rollups.map((r) => r.customer_id)))
    .where('meter_id', 'in', unique(rollups.map((r) => r.meter_id)))
    .where('bucket', 'in', unique(rollups.map((r) => r.bucket)))
    .execute();
  const byKey = new Map(stored.map((row) => [`${row.customer_id}\u0000${row.meter_id}\u0000${row.bucket}`, row]));
  const rows = rollups.map((rollup) => {
    const row = byKey.get(`${rollup.customer_id}\u0000${rollup.meter_id}\u0000${rollup.bucket}`);
    return row ? merged(row, rollup) : rollup;
  });
  await trx
    .insertInto('usage_rollups')
    .values(rows)
    .onConflict((oc) =>
      oc.columns(['customer_id', 'meter_id', 'bucket']).doUpdateSet({
        event_count: sql`excluded.event_count`,
        value_sum: sql`excluded.value_sum`,
        value_max: sql`excluded.value_max`,
        last_value: sql`excluded.last_value`,
        last_transaction_id: sql`excluded.last_transaction_id`,
        last_timestamp: sql`excluded.last_timestamp`,
      }),
    )
    .execute();
}

// Rows per statement: SQLite binds at most 32,766 values, PostgreSQL 65,535.
const ROWS_PER_STATEMENT = 2_000;

function chunks<T>(rows: readonly T[]): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < rows.length; i += ROWS_PER_STATEMENT) out.push(rows.slice(i, i + ROWS_PER_STATEMENT));
  return out;
}

async function appendBatch(trx: Transaction<Database>, events: readonly NewUsageEvent[]): Promise<AppendOutcome[]> {
  const outcomes: AppendOutcome[] = events.map(() => 'duplicate');
  // The first of the batch's events with a key stands for it; later ones are duplicates.
  const firstOf = new Map<string, number>();
  events.forEach((event, i) => {
    const key = `${event.customer_id}\u0000${event.transaction_id}`;
    if (!firstOf.has(key)) firstOf.set(key, i);
  });
  if (firstOf.size === 0) return outcomes;
  const candidates = [...firstOf.values()]
    .map((i) => events[i]!)
    .sort((a, b) => compareBytes(a.customer_id, b.customer_id) || compareBytes(a.transaction_id, b.transaction_id));
  const fresh = new Set<string>();
  for (const part of chunks(candidates)) {
    const inserted = await trx
      .insertInto('usage_event_keys')
      .values(
        part.map((e) => ({ customer_id: e.customer_id, transaction_id: e.transaction_id, received_at: e.received_at })),
      )
      .onConflict((oc) => oc.columns(['customer_id', 'transaction_id']).doNothing())
      .returning(['customer_id', 'transaction_id'])
      .execute();
    for (const row of inserted) fresh.add(`${row.customer_id}\u0000${row.transaction_id}`);
  }
  const stored: NewUsageEvent[] = [];
  for (const [key, i] of firstOf) {
    if (!fresh.has(key)) continue;
    outcomes[i] = 'accepted';
    stored.push(events[i]!);
  }
  if (stored.length === 0) return outcomes;
  for (const part of chunks(stored)) await trx.insertInto('usage_events').values(part).execute();
  const rollups = rollupsOf(stored);
  for (const part of chunks(rollups)) {
    await (isPostgres(trx) ? upsertRollupsPostgres(trx, part) : upsertRollupsSqlite(trx, part));
  }
  return outcomes;
}

/** [from, to) split into the whole minutes inside it and the partial ones at its ends. */
function splitRange(from: string, to: string): { inner: [string, string] | null; edges: [string, string][] } {
  const fromMs = Date.parse(from);
  const toMs = Date.parse(to);
  const innerStart = Math.ceil(fromMs / MINUTE_MS) * MINUTE_MS;
  const innerEnd = Math.floor(toMs / MINUTE_MS) * MINUTE_MS;
  if (innerStart >= innerEnd) return { inner: null, edges: [[from, to]] };
  const iso = (ms: number) => new Date(ms).toISOString();
  const edges: [string, string][] = [];
  if (fromMs < innerStart) edges.push([from, iso(innerStart)]);
  if (innerEnd < toMs) edges.push([iso(innerEnd), to]);
  return { inner: [iso(innerStart), iso(innerEnd)], edges };
}

async function aggregate(db: Db, query: AggregateQuery): Promise<string> {
  const { customer_id, meter, from, to } = query;
  if (!(Date.parse(from) < Date.parse(to))) return '0';
  const events = db.selectFrom('usage_events').where('customer_id', '=', customer_id).where('meter_id', '=', meter.id);
  if (meter.aggregation === 'unique_count') {
    const row = await events
      .where('timestamp', '>=', from)
      .where('timestamp', '<', to)
      .select((eb) => eb.fn.count<number | string>('value').distinct().as('n'))
      .executeTakeFirst();
    return String(Number(row?.n ?? 0));
  }
  const { inner, edges } = splitRange(from, to);
  const edgeRows =
    edges.length === 0
      ? []
      : await events
          .where((eb) => eb.or(edges.map(([a, b]) => eb.and([eb('timestamp', '>=', a), eb('timestamp', '<', b)]))))
          .select(['timestamp', 'transaction_id', 'value'])
          .execute();
  const rollups = db
    .selectFrom('usage_rollups')
    .where('customer_id', '=', customer_id)
    .where('meter_id', '=', meter.id)
    .where('bucket', '>=', inner?.[0] ?? from)
    .where('bucket', '<', inner?.[1] ?? from);
  const pg = isPostgres(db);
  switch (meter.aggregation) {
    case 'count': {
      const row = inner
        ? await rollups.select((eb) => eb.fn.sum<string | number>('event_count').as('n')).executeTakeFirst()
        : undefined;
      return String(Number(row?.n ?? 0) + edgeRows.length);
    }
    case 'sum': {
      let fromRollups: string[] = [];
      if (inner && pg) {
        const row = await rollups.select((eb) => eb.fn.sum<string | null>('value_sum').as('s')).executeTakeFirst();
        fromRollups = row?.s === null || row?.s === undefined ? [] : [String(row.s)];
      } else if (inner) {
        fromRollups = (await rollups.select('value_sum').execute()).map((r) => r.value_sum);
      }
      return addDecimals([...fromRollups, ...edgeRows.flatMap((r) => (r.value === null ? [] : [r.value]))]);
    }
    case 'max': {
      let best: string | null = null;
      if (inner && pg) {
        const row = await rollups.select((eb) => eb.fn.max('value_max').as('m')).executeTakeFirst();
        best = row?.m === null || row?.m === undefined ? null : String(row.m);
      } else if (inner) {
        for (const r of await rollups.select('value_max').execute()) best = maxDecimal(best, r.value_max);
      }
      for (const r of edgeRows) best = maxDecimal(best, r.value);
      return best === null ? '0' : canonicalDecimal(best);
    }
    case 'last': {
      let last: { timestamp: string; transaction_id: string; value: string | null } | undefined;
      if (inner) {
        const row = await rollups
          .select(['last_timestamp', 'last_transaction_id', 'last_value'])
          .orderBy('last_timestamp', 'desc')
          .orderBy(pg ? sql`last_transaction_id collate "C"` : sql`last_transaction_id`, 'desc')
          .limit(1)
          .executeTakeFirst();
        if (row)
          last = { timestamp: row.last_timestamp, transaction_id: row.last_transaction_id, value: row.last_value };
      }
      for (const r of edgeRows) {
        if (!last || later(r.timestamp, r.transaction_id, last.timestamp, last.transaction_id)) last = r;
      }
      return last?.value === null || last?.value === undefined ? '0' : canonicalDecimal(last.value);
    }
  }
}

/** The usage store on the app's own database (PostgreSQL or SQLite). */
export const sqlUsageStore: UsageStore = { appendBatch, aggregate };
