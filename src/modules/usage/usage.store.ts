// The storage of usage events behind one small interface (SPEC §15 "Scale"): appendBatch
// writes a batch, aggregate reads a meter's value over a time range. This implementation
// is SQL on the app's own database (PostgreSQL partitioned by month, or SQLite); another
// store (Citus, ClickHouse) would implement the same two functions (docs/scaling.md).
//
// appendBatch: the batch's (customer_id, transaction_id) keys go into usage_event_keys with
// ON CONFLICT DO NOTHING RETURNING: the rows returned are the new events, the others
// duplicates (of an earlier batch, a retry, another instance: the key's primary key decides,
// and a concurrent insert of the same key waits for the first to commit). Only the new events
// are then stored, with their rollups per UTC minute, hour and day (count, exact sum, max,
// latest) and, for unique_count meters, their distinct values per hour and day — all in one
// transaction, committed before appendBatch resolves. PostgreSQL does it all in ONE statement
// (arrays bound as parameters, unnest, data-modifying CTEs), sent without BEGIN and COMMIT:
// a single statement is its own transaction, so a batch costs one round trip. SQLite,
// in-process, runs a few statements in one transaction and adds decimals in JavaScript (its
// own arithmetic is binary floating point).
//
// aggregate: [from, to) is covered by the coarsest buckets that fit — whole days from the
// daily rollups, the whole hours at either end from the hourly ones, the whole minutes left
// from the minute ones, and the partial minutes at the very ends from the events themselves —
// so a month reads ≈ 31 + 46 + 118 small rows whatever its number of events. unique_count,
// whose counts do not add up, counts the distinct values of the union of the daily and hourly
// distinct-value rows and of the events of the partial hours at the ends.
import { type Kysely, sql, type Transaction } from 'kysely';
import { isPostgres } from '../../db/column-types.ts';
import type { Database } from '../../db/database.ts';
import { isRetryableConflict } from '../../db/errors.ts';
import { runMultiRowSqlite } from '../../db/bulk.ts';
import type { MeterAggregation, UsageEventsTable, UsageRollupsTable } from '../../db/tables/usage.table.ts';
import { TRANSACTION_ATTEMPTS, waitBeforeRerun } from '../../db/transaction.ts';
import { addDecimals, canonicalDecimal, maxDecimal, scaled, unscaled } from './usage.decimal.ts';

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
   * Stores `events` and commits them — keys, events and rollups all or nothing, durable when
   * the promise resolves: one outcome per event, in order. `duplicate` for an event whose
   * (customer_id, transaction_id) is stored already or appears earlier in the batch: it is
   * not stored again nor counted. Throws what the database throws (nothing is then stored).
   */
  appendBatch(db: Kysely<Database>, events: readonly NewUsageEvent[]): Promise<AppendOutcome[]>;
  /** The meter's value over the range as canonical decimal text; "0" when there are no events. */
  aggregate(db: Db, query: AggregateQuery): Promise<string>;
}

const MINUTE_MS = 60_000;
const HOUR_MS = 60 * MINUTE_MS;
const DAY_MS = 24 * HOUR_MS;

type RollupTable = 'usage_rollups' | 'usage_rollups_hourly' | 'usage_rollups_daily';
type DistinctTable = 'usage_distinct_hourly' | 'usage_distinct_daily';

/** The rollup tables, finest first: each bucket size divides the next (UTC, from the epoch). */
const ROLLUP_LEVELS: readonly { table: RollupTable; ms: number; interval: string }[] = [
  { table: 'usage_rollups', ms: MINUTE_MS, interval: '1 minute' },
  { table: 'usage_rollups_hourly', ms: HOUR_MS, interval: '1 hour' },
  { table: 'usage_rollups_daily', ms: DAY_MS, interval: '1 day' },
];
/** The distinct-value tables of unique_count meters, finest first. */
const DISTINCT_LEVELS: readonly { table: DistinctTable; ms: number; interval: string }[] = [
  { table: 'usage_distinct_hourly', ms: HOUR_MS, interval: '1 hour' },
  { table: 'usage_distinct_daily', ms: DAY_MS, interval: '1 day' },
];

/** The UTC bucket of `size` ms (a minute, an hour, a day) that `iso` falls in, as ISO 8601. */
function bucketOf(iso: string, size: number): string {
  return new Date(Math.floor(Date.parse(iso) / size) * size).toISOString();
}

/** The UTC minute `iso` falls in, as ISO 8601 (`…T10:07:00.000Z`). */
export function minuteOf(iso: string): string {
  return bucketOf(iso, MINUTE_MS);
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

/**
 * [from, to) (epoch ms) covered by the coarsest buckets of `sizes` (ascending, each dividing
 * the next) that fit: one list of [start, end) ranges per size, plus the `events` ranges left
 * at the ends, finer than the smallest size. Every instant of [from, to) is in exactly one
 * range; a size's ranges are whole buckets of that size.
 */
export function coverRange(
  from: number,
  to: number,
  sizes: readonly number[],
): { events: [number, number][]; buckets: [number, number][][] } {
  const events: [number, number][] = [];
  const buckets: [number, number][][] = sizes.map(() => []);
  let lo = from;
  let hi = to;
  let finer = events;
  for (const [i, size] of sizes.entries()) {
    const start = Math.ceil(lo / size) * size;
    const end = Math.floor(hi / size) * size;
    if (start >= end) break;
    if (lo < start) finer.push([lo, start]);
    if (end < hi) finer.push([end, hi]);
    lo = start;
    hi = end;
    finer = buckets[i]!;
  }
  if (lo < hi) finer.push([lo, hi]);
  return { events, buckets };
}

// ---------------------------------------------------------------------------------------
// Writing: PostgreSQL

const EPOCH = sql`timestamptz '1970-01-01T00:00:00Z'`;
/** The latest first: timestamp, then transaction_id in byte order (`last` meters). */
const LATEST_FIRST = sql`order by "timestamp" desc, transaction_id collate "C" desc`;

/** The upsert of one rollup level from the `fresh` CTE (the batch's new events, `num` their decimal). */
function rollupCte(level: (typeof ROLLUP_LEVELS)[number]) {
  const t = sql.table(level.table);
  const col = (name: string) => sql.ref(`${level.table}.${name}`);
  const newer = sql`(excluded.last_timestamp, excluded.last_transaction_id collate "C") > (${col('last_timestamp')}, ${col('last_transaction_id')} collate "C")`;
  // Bucket sizes are this module's constants, never client text.
  return sql`insert into ${t} (customer_id, meter_id, bucket, event_count, value_sum, value_max, last_timestamp, last_transaction_id, last_value)
    select customer_id, meter_id, date_bin(${sql.lit(level.interval)}::interval, "timestamp", ${EPOCH}) as bucket,
      count(*), coalesce(sum(num), 0), max(num),
      (array_agg("timestamp" ${LATEST_FIRST}))[1], (array_agg(transaction_id ${LATEST_FIRST}))[1], (array_agg(num ${LATEST_FIRST}))[1]
    from fresh group by customer_id, meter_id, bucket
    -- One order for every writer: concurrent upserts of the same rows queue, not deadlock.
    order by customer_id collate "C", meter_id collate "C", bucket
    on conflict (customer_id, meter_id, bucket) do update set
      event_count = ${col('event_count')} + excluded.event_count,
      value_sum = ${col('value_sum')} + excluded.value_sum,
      value_max = greatest(${col('value_max')}, excluded.value_max),
      last_value = case when ${newer} then excluded.last_value else ${col('last_value')} end,
      last_transaction_id = case when ${newer} then excluded.last_transaction_id else ${col('last_transaction_id')} end,
      last_timestamp = case when ${newer} then excluded.last_timestamp else ${col('last_timestamp')} end`;
}

/** The distinct values of the batch's new unique_count events, per bucket of one level. */
function distinctCte(level: (typeof DISTINCT_LEVELS)[number]) {
  const bucket = sql`date_bin(${sql.lit(level.interval)}::interval, f."timestamp", ${EPOCH})`;
  return sql`insert into ${sql.table(level.table)} (customer_id, meter_id, bucket, value)
    select f.customer_id, f.meter_id, ${bucket}, f.value
    from fresh f join meters m on m.id = f.meter_id
    where m.aggregation = 'unique_count' and f.value is not null
    group by f.customer_id, f.meter_id, ${bucket}, f.value
    order by f.customer_id collate "C", f.meter_id collate "C", ${bucket}, f.value collate "C"
    on conflict do nothing`;
}

/**
 * PostgreSQL: the whole batch in one statement — keys, events, rollups and distinct values —
 * with each column bound as one array (a fixed number of parameters whatever the batch size).
 * Returns the keys that were new, as `customer_id \0 transaction_id`.
 */
async function appendPostgres(db: Kysely<Database>, events: readonly NewUsageEvent[]): Promise<Set<string>> {
  const column = <K extends keyof NewUsageEvent>(name: K) => events.map((e) => e[name]);
  const { rows } = await sql<{ customer_id: string; transaction_id: string }>`
    with input as (
      select * from unnest(${column('id')}::text[], ${column('customer_id')}::text[], ${column('meter_id')}::text[],
        ${column('event_name')}::text[], ${column('transaction_id')}::text[], ${column('timestamp')}::timestamptz[],
        ${column('received_at')}::timestamptz[], ${column('value')}::text[], ${column('properties')}::text[])
        with ordinality as u(id, customer_id, meter_id, event_name, transaction_id, "timestamp", received_at, value, properties, ord)
    ), keys as (
      insert into usage_event_keys (customer_id, transaction_id, received_at)
      select customer_id, transaction_id, received_at from input order by ord
      on conflict do nothing
      returning customer_id, transaction_id
    ), fresh as (
      -- A unique_count meter's value may be any text: only decimals add up.
      select i.*, case when i.value ~ '^-?[0-9]+(\\.[0-9]+)?$' then i.value::numeric end as num
      from input i join keys k on k.customer_id = i.customer_id and k.transaction_id = i.transaction_id
    ), stored as (
      insert into usage_events (id, customer_id, meter_id, event_name, transaction_id, "timestamp", received_at, value, properties)
      select id, customer_id, meter_id, event_name, transaction_id, "timestamp", received_at, value, properties from fresh order by ord
    ),
    ${sql.join(
      [
        ...ROLLUP_LEVELS.map((level, i) => sql`r${sql.raw(String(i))} as (${rollupCte(level)})`),
        ...DISTINCT_LEVELS.map((level, i) => sql`d${sql.raw(String(i))} as (${distinctCte(level)})`),
      ],
      sql`, `,
    )}
    select customer_id, transaction_id from keys`.execute(db);
  return new Set(rows.map((row) => `${row.customer_id}\u0000${row.transaction_id}`));
}

// ---------------------------------------------------------------------------------------
// Writing: SQLite

type Rollup = UsageRollupsTable & { event_count: number };

/** An event read once for the rollups: its instant in ms and its decimal value scaled (or null). */
interface Parsed {
  event: NewUsageEvent;
  ms: number;
  value: bigint | null;
}

function parsedOf(events: readonly NewUsageEvent[]): Parsed[] {
  return events.map((event) => ({
    event,
    ms: Date.parse(event.timestamp),
    // A unique_count meter's value may be any text: only decimals add up (and only sum, max
    // and last meters read them).
    value: event.value !== null && /^-?\d+(\.\d+)?$/.test(event.value) ? scaled(event.value) : null,
  }));
}

/** One rollup being added up: a bucket's count, exact sum and max (scaled), and latest event. */
interface Acc {
  customer_id: string;
  meter_id: string;
  /** The bucket's start (epoch ms). */
  bucket: number;
  count: number;
  sum: bigint;
  max: bigint | null;
  last: Parsed;
}

/** `last` is the later of the two: by timestamp, then transaction id in byte order. */
function laterParsed(a: Parsed, b: Parsed): Parsed {
  if (a.ms !== b.ms) return a.ms > b.ms ? a : b;
  return compareBytes(a.event.transaction_id, b.event.transaction_id) > 0 ? a : b;
}

/**
 * `parts` (events as one-event rollups, or rollups of a finer level) added up per customer,
 * meter and bucket of `size` ms. Each level is made from the one below it, so the events are
 * walked once, whatever the number of levels.
 */
function rollUp(parts: Iterable<Acc>, size: number): Acc[] {
  const byKey = new Map<string, Acc>();
  for (const part of parts) {
    const bucket = Math.floor(part.bucket / size) * size;
    const key = `${part.customer_id}\u0000${part.meter_id}\u0000${bucket}`;
    const current = byKey.get(key);
    if (!current) {
      byKey.set(key, { ...part, bucket });
      continue;
    }
    current.count += part.count;
    current.sum += part.sum;
    if (part.max !== null && (current.max === null || part.max > current.max)) current.max = part.max;
    current.last = laterParsed(current.last, part.last);
  }
  return [...byKey.values()];
}

/** The events (all new, parsed once) as one-event rollups at their own instant. */
function* eventParts(events: readonly Parsed[]): Generator<Acc> {
  for (const p of events) {
    yield {
      customer_id: p.event.customer_id,
      meter_id: p.event.meter_id,
      bucket: p.ms,
      count: 1,
      sum: p.value ?? 0n,
      max: p.value,
      last: p,
    };
  }
}

/** A rollup as its row: exact sums turned into decimal text once per bucket. */
function rollupRow(acc: Acc): Rollup {
  return {
    customer_id: acc.customer_id,
    meter_id: acc.meter_id,
    bucket: new Date(acc.bucket).toISOString(),
    event_count: acc.count,
    value_sum: unscaled(acc.sum),
    value_max: acc.max === null ? null : unscaled(acc.max),
    last_timestamp: acc.last.event.timestamp,
    last_transaction_id: acc.last.event.transaction_id,
    last_value: acc.last.value === null ? null : unscaled(acc.last.value),
  };
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

/**
 * SQLite: the stored rollups of the batch's keys read, merged in JavaScript (exact decimal
 * text) and written back. Safe: SQLite runs one write transaction at a time.
 */
async function upsertRollupsSqlite(trx: Transaction<Database>, table: RollupTable, rollups: Rollup[]): Promise<void> {
  const unique = <T>(values: T[]) => [...new Set(values)];
  const stored = await trx
    .selectFrom(table)
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
    .insertInto(table)
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

// Rows per statement: SQLite binds at most 32,766 values.
const ROWS_PER_STATEMENT = 2_000;

function chunks<T>(rows: readonly T[]): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < rows.length; i += ROWS_PER_STATEMENT) out.push(rows.slice(i, i + ROWS_PER_STATEMENT));
  return out;
}

/** The keys' and events' multi-row inserts on SQLite (fixed shapes: db/bulk.ts). */
const KEY_INSERT = {
  head: 'insert into "usage_event_keys" ("customer_id", "transaction_id", "received_at") values ',
  width: 3,
  tail: ' on conflict ("customer_id", "transaction_id") do nothing returning "customer_id", "transaction_id"',
};
const EVENT_INSERT = {
  head: 'insert into "usage_events" ("id", "customer_id", "meter_id", "event_name", "transaction_id", "timestamp", "received_at", "value", "properties") values ',
  width: 9,
  tail: '',
};

/** SQLite: keys, events, rollups per level, distinct values; returns the new keys. */
async function appendSqlite(trx: Transaction<Database>, candidates: readonly NewUsageEvent[]): Promise<Set<string>> {
  const fresh = new Set<string>();
  const inserted = await runMultiRowSqlite<{ customer_id: string; transaction_id: string }>(
    trx,
    KEY_INSERT,
    candidates.map((e) => [e.customer_id, e.transaction_id, e.received_at]),
  );
  for (const row of inserted) fresh.add(`${row.customer_id}\u0000${row.transaction_id}`);
  const stored = candidates.filter((e) => fresh.has(`${e.customer_id}\u0000${e.transaction_id}`));
  if (stored.length === 0) return fresh;
  await runMultiRowSqlite(
    trx,
    EVENT_INSERT,
    stored.map((e) => [
      e.id,
      e.customer_id,
      e.meter_id,
      e.event_name,
      e.transaction_id,
      e.timestamp,
      e.received_at,
      e.value,
      e.properties,
    ]),
  );
  let parts: Iterable<Acc> = eventParts(parsedOf(stored));
  for (const level of ROLLUP_LEVELS) {
    const rollups = rollUp(parts, level.ms);
    for (const part of chunks(rollups.map(rollupRow))) await upsertRollupsSqlite(trx, level.table, part);
    parts = rollups;
  }
  const meterIds = [...new Set(stored.map((e) => e.meter_id))];
  const uniqueMeters = new Set(
    (
      await trx
        .selectFrom('meters')
        .select('id')
        .where('id', 'in', meterIds)
        .where('aggregation', '=', 'unique_count')
        .execute()
    ).map((row) => row.id),
  );
  const counted = stored.filter((e) => uniqueMeters.has(e.meter_id) && e.value !== null);
  for (const level of DISTINCT_LEVELS) {
    const rows = new Map<string, { customer_id: string; meter_id: string; bucket: string; value: string }>();
    for (const e of counted) {
      const bucket = bucketOf(e.timestamp, level.ms);
      rows.set(`${e.customer_id}\u0000${e.meter_id}\u0000${bucket}\u0000${e.value}`, {
        customer_id: e.customer_id,
        meter_id: e.meter_id,
        bucket,
        value: e.value!,
      });
    }
    for (const part of chunks([...rows.values()])) {
      await trx
        .insertInto(level.table)
        .values(part)
        .onConflict((oc) => oc.doNothing())
        .execute();
    }
  }
  return fresh;
}

/**
 * PostgreSQL: appendPostgres as its own transaction (autocommit), run again when PostgreSQL
 * aborts it as a deadlock loser or serialization failure (see db/transaction.ts).
 */
async function appendPostgresCommitted(db: Kysely<Database>, events: readonly NewUsageEvent[]): Promise<Set<string>> {
  for (let run = 1; ; run++) {
    try {
      return await appendPostgres(db, events);
    } catch (error) {
      if (run >= TRANSACTION_ATTEMPTS || !isRetryableConflict(error)) throw error;
      await waitBeforeRerun(run);
    }
  }
}

async function appendBatch(db: Kysely<Database>, events: readonly NewUsageEvent[]): Promise<AppendOutcome[]> {
  const outcomes: AppendOutcome[] = events.map(() => 'duplicate');
  // The first of the batch's events with a key stands for it; later ones are duplicates.
  const firstOf = new Map<string, number>();
  events.forEach((event, i) => {
    const key = `${event.customer_id}\u0000${event.transaction_id}`;
    if (!firstOf.has(key)) firstOf.set(key, i);
  });
  if (firstOf.size === 0) return outcomes;
  // One order for every writer: concurrent inserts of the same keys queue, not deadlock.
  // Keys hold no NUL (ingestion refuses it), so `customer \0 transaction` in bytes orders as the pair.
  const candidates = [...firstOf]
    .map(([key, i]) => ({ event: events[i]!, bytes: Buffer.from(key, 'utf8') }))
    .sort((a, b) => Buffer.compare(a.bytes, b.bytes))
    .map((c) => c.event);
  const fresh = await (isPostgres(db)
    ? appendPostgresCommitted(db, candidates)
    : db.transaction().execute((trx) => appendSqlite(trx, candidates)));
  for (const [key, i] of firstOf) if (fresh.has(key)) outcomes[i] = 'accepted';
  return outcomes;
}

// ---------------------------------------------------------------------------------------
// Reading

type Ranges = [number, number][];

/** `column` in one of `ranges` (epoch ms, [start, end)), bound as ISO 8601 parameters. */
function inRanges(column: string, ranges: Ranges) {
  return sql<boolean>`(${sql.join(
    ranges.map(
      ([a, b]) =>
        sql`(${sql.ref(column)} >= ${new Date(a).toISOString()} and ${sql.ref(column)} < ${new Date(b).toISOString()})`,
    ),
    sql` or `,
  )})`;
}

interface Folded {
  count: bigint;
  sums: string[];
  max: string | null;
  last: { timestamp: string; transaction_id: string; value: string | null } | undefined;
}

async function aggregate(db: Db, query: AggregateQuery): Promise<string> {
  const { customer_id, meter } = query;
  const from = Date.parse(query.from);
  const to = Date.parse(query.to);
  if (!(from < to)) return '0';
  if (meter.aggregation === 'unique_count') {
    const cover = coverRange(
      from,
      to,
      DISTINCT_LEVELS.map((level) => level.ms),
    );
    const parts = [
      ...(cover.events.length === 0
        ? []
        : [
            sql`select value from usage_events where customer_id = ${customer_id} and meter_id = ${meter.id} and ${inRanges('timestamp', cover.events)}`,
          ]),
      ...DISTINCT_LEVELS.flatMap((level, i) =>
        cover.buckets[i]!.length === 0
          ? []
          : [
              sql`select value from ${sql.table(level.table)} where customer_id = ${customer_id} and meter_id = ${meter.id} and ${inRanges('bucket', cover.buckets[i]!)}`,
            ],
      ),
    ];
    const { rows } = await sql<{
      n: number | string;
    }>`select count(distinct value) as n from (${sql.join(parts, sql` union all `)}) as v`.execute(db);
    return String(Number(rows[0]?.n ?? 0));
  }
  const cover = coverRange(
    from,
    to,
    ROLLUP_LEVELS.map((level) => level.ms),
  );
  const folded: Folded = { count: 0n, sums: [], max: null, last: undefined };
  const take = (timestamp: string, transaction_id: string, value: string | null) => {
    const last = folded.last;
    if (!last || later(timestamp, transaction_id, last.timestamp, last.transaction_id)) {
      folded.last = { timestamp, transaction_id, value };
    }
  };
  // One query, one round trip: the partial minutes' events, shaped as rollups of one event,
  // and the rollups of each level. A month is at most ≈ 31 days + 46 hours + 118 minutes of
  // rows plus its two partial minutes' events, added here exactly on both databases (NUMERIC
  // reads as text on PostgreSQL).
  const where = sql`customer_id = ${customer_id} and meter_id = ${meter.id}`;
  // A meter's value is a canonical decimal (sum, max, last) or null (count).
  const value = isPostgres(db) ? sql`value::numeric` : sql`value`;
  const parts = [
    ...(cover.events.length === 0
      ? []
      : [
          sql`select 1 as event_count, ${value} as value_sum, ${value} as value_max, "timestamp" as last_timestamp, transaction_id as last_transaction_id, ${value} as last_value from usage_events where ${where} and ${inRanges('timestamp', cover.events)}`,
        ]),
    ...ROLLUP_LEVELS.flatMap((level, i) =>
      cover.buckets[i]!.length === 0
        ? []
        : [
            sql`select event_count, value_sum, value_max, last_timestamp, last_transaction_id, last_value from ${sql.table(level.table)} where ${where} and ${inRanges('bucket', cover.buckets[i]!)}`,
          ],
    ),
  ];
  const { rows } = await sql<{
    event_count: number | string;
    value_sum: string | null;
    value_max: string | null;
    last_timestamp: string;
    last_transaction_id: string;
    last_value: string | null;
  }>`${sql.join(parts, sql` union all `)}`.execute(db);
  const text = (v: unknown) => (v === null ? null : String(v));
  for (const r of rows) {
    folded.count += BigInt(r.event_count);
    if (r.value_sum !== null) folded.sums.push(String(r.value_sum));
    folded.max = maxDecimal(folded.max, text(r.value_max));
    // PostgreSQL's timestamptz reads as ISO 8601 text here, as everywhere in the app.
    take(r.last_timestamp, r.last_transaction_id, text(r.last_value));
  }
  switch (meter.aggregation) {
    case 'count':
      return folded.count.toString();
    case 'sum':
      return addDecimals(folded.sums);
    case 'max':
      return folded.max === null ? '0' : canonicalDecimal(folded.max);
    case 'last':
      return folded.last?.value === null || folded.last?.value === undefined
        ? '0'
        : canonicalDecimal(folded.last.value);
  }
}

/** The usage store on the app's own database (PostgreSQL or SQLite). */
export const sqlUsageStore: UsageStore = { appendBatch, aggregate };
