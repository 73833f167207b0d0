// Coarse usage rollups (SPEC §15 "Scale"): beside the per-minute `usage_rollups`, the same
// figures per UTC hour (`usage_rollups_hourly`) and per UTC day (`usage_rollups_daily`),
// written in the ingesting transaction, so a month's value reads ≈ 31 days + the hours and
// minutes of its two partial edges instead of ≈ 43,000 minutes. unique_count cannot add
// counts up, so its distinct values are kept per hour and per day
// (`usage_distinct_hourly`, `usage_distinct_daily`: one row per customer, meter, bucket and
// value) and a period counts the distinct values of the union of its buckets' rows. Existing
// data is rolled up here from the minute rollups and the events.
import { type Kysely, sql } from 'kysely';
import { columnTypes, isPostgres } from '../column-types.ts';

const LEVELS = [
  { rollups: 'usage_rollups_hourly', distinct: 'usage_distinct_hourly', ms: 60 * 60 * 1000, pg: '1 hour' },
  { rollups: 'usage_rollups_daily', distinct: 'usage_distinct_daily', ms: 24 * 60 * 60 * 1000, pg: '1 day' },
] as const;

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function up(db: Kysely<any>): Promise<void> {
  const t = columnTypes(db);
  const decimal = isPostgres(db) ? 'numeric' : 'text';
  for (const level of LEVELS) {
    await db.schema
      .createTable(level.rollups)
      .addColumn('customer_id', 'text', (c) => c.notNull())
      .addColumn('meter_id', 'text', (c) => c.notNull())
      // The UTC hour or day the events fell in.
      .addColumn('bucket', t.timestamp, (c) => c.notNull())
      .addColumn('event_count', t.bigint, (c) => c.notNull())
      .addColumn('value_sum', decimal, (c) => c.notNull())
      .addColumn('value_max', decimal)
      .addColumn('last_timestamp', t.timestamp, (c) => c.notNull())
      .addColumn('last_transaction_id', 'text', (c) => c.notNull())
      .addColumn('last_value', decimal)
      .addPrimaryKeyConstraint(`${level.rollups}_pkey`, ['customer_id', 'meter_id', 'bucket'])
      .execute();
    await db.schema
      .createTable(level.distinct)
      .addColumn('customer_id', 'text', (c) => c.notNull())
      .addColumn('meter_id', 'text', (c) => c.notNull())
      .addColumn('bucket', t.timestamp, (c) => c.notNull())
      .addColumn('value', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint(`${level.distinct}_pkey`, ['customer_id', 'meter_id', 'bucket', 'value'])
      .execute();
  }
  if (isPostgres(db)) await backfillPostgres(db);
  else await backfillSqlite(db);
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
async function backfillPostgres(db: Kysely<any>): Promise<void> {
  for (const level of LEVELS) {
    // The interval and table names are this file's constants, never client text.
    const bucket = sql`date_bin(${sql.lit(level.pg)}::interval, bucket, timestamptz '1970-01-01T00:00:00Z')`;
    const latest = sql`order by last_timestamp desc, last_transaction_id collate "C" desc`;
    await sql`insert into ${sql.table(level.rollups)} (customer_id, meter_id, bucket, event_count, value_sum, value_max, last_timestamp, last_transaction_id, last_value)
      select customer_id, meter_id, ${bucket}, sum(event_count), sum(value_sum), max(value_max),
        (array_agg(last_timestamp ${latest}))[1], (array_agg(last_transaction_id ${latest}))[1], (array_agg(last_value ${latest}))[1]
      from usage_rollups group by customer_id, meter_id, ${bucket}`.execute(db);
    await sql`insert into ${sql.table(level.distinct)} (customer_id, meter_id, bucket, value)
      select distinct e.customer_id, e.meter_id, date_bin(${sql.lit(level.pg)}::interval, e."timestamp", timestamptz '1970-01-01T00:00:00Z'), e.value
      from usage_events e join meters m on m.id = e.meter_id
      where m.aggregation = 'unique_count' and e.value is not null`.execute(db);
  }
}

const SCALE = 10n ** 12n;
function scaled(text: string): bigint {
  const negative = text.startsWith('-');
  const [whole, fraction = ''] = (negative ? text.slice(1) : text).split('.');
  const magnitude = BigInt(whole!) * SCALE + BigInt(fraction.padEnd(12, '0').slice(0, 12));
  return negative ? -magnitude : magnitude;
}
function unscaled(value: bigint): string {
  const magnitude = value < 0n ? -value : value;
  const fraction = (magnitude % SCALE).toString().padStart(12, '0').replace(/0+$/, '');
  const body = `${magnitude / SCALE}${fraction === '' ? '' : `.${fraction}`}`;
  return value < 0n ? `-${body}` : body;
}

interface MinuteRow {
  customer_id: string;
  meter_id: string;
  bucket: string;
  event_count: number;
  value_sum: string;
  value_max: string | null;
  last_timestamp: string;
  last_transaction_id: string;
  last_value: string | null;
}

/** SQLite: exact decimal text, so the minute rows are added up here (BigInt), not by SQLite. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
async function backfillSqlite(db: Kysely<any>): Promise<void> {
  const minutes = (await db.selectFrom('usage_rollups').selectAll().execute()) as MinuteRow[];
  for (const level of LEVELS) {
    const byKey = new Map<string, MinuteRow & { sum: bigint }>();
    for (const row of minutes) {
      const bucket = new Date(Math.floor(Date.parse(row.bucket) / level.ms) * level.ms).toISOString();
      const key = `${row.customer_id}\u0000${row.meter_id}\u0000${bucket}`;
      const current = byKey.get(key);
      if (!current) {
        byKey.set(key, { ...row, bucket, event_count: Number(row.event_count), sum: scaled(row.value_sum) });
        continue;
      }
      current.event_count += Number(row.event_count);
      current.sum += scaled(row.value_sum);
      if (row.value_max !== null && (current.value_max === null || scaled(row.value_max) > scaled(current.value_max)))
        current.value_max = row.value_max;
      const newer =
        row.last_timestamp > current.last_timestamp ||
        (row.last_timestamp === current.last_timestamp &&
          Buffer.compare(Buffer.from(row.last_transaction_id), Buffer.from(current.last_transaction_id)) > 0);
      if (newer) {
        current.last_timestamp = row.last_timestamp;
        current.last_transaction_id = row.last_transaction_id;
        current.last_value = row.last_value;
      }
    }
    for (const { sum, ...row } of byKey.values()) {
      await db
        .insertInto(level.rollups)
        .values({ ...row, value_sum: unscaled(sum) })
        .execute();
    }
    const events = await db
      .selectFrom('usage_events as e')
      .innerJoin('meters as m', 'm.id', 'e.meter_id')
      .where('m.aggregation', '=', 'unique_count')
      .where('e.value', 'is not', null)
      .select(['e.customer_id', 'e.meter_id', 'e.timestamp', 'e.value'])
      .execute();
    for (const e of events) {
      const bucket = new Date(Math.floor(Date.parse(e.timestamp) / level.ms) * level.ms).toISOString();
      await db
        .insertInto(level.distinct)
        .values({ customer_id: e.customer_id, meter_id: e.meter_id, bucket, value: e.value })
        .onConflict((oc) => oc.doNothing())
        .execute();
    }
  }
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function down(db: Kysely<any>): Promise<void> {
  for (const level of LEVELS) {
    await db.schema.dropTable(level.distinct).execute();
    await db.schema.dropTable(level.rollups).execute();
  }
}
