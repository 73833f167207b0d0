import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sql } from 'kysely';
import { ON_POSTGRES } from '../../../test/helpers/database.ts';
import { databaseBefore, MIGRATION_CUSTOMER } from '../../../test/helpers/migrations.ts';
import { migrateToLatest } from '../migrate.ts';

const CREATED = '2026-01-15T10:00:00.000Z';

function minute(bucket: string, count: number, sum: string, max: string, lastAt: string, lastTx: string) {
  return {
    customer_id: MIGRATION_CUSTOMER,
    meter_id: 'meter_sum',
    bucket,
    event_count: count,
    value_sum: sum,
    value_max: max,
    last_timestamp: lastAt,
    last_transaction_id: lastTx,
    last_value: max,
  };
}

test('0039 rolls the minute rollups up per hour and day, exactly, and the distinct values of unique_count events', async (t) => {
  const { handle, db } = await databaseBefore(t, '0039_usage_coarse_rollups', CREATED);
  for (const [id, aggregation, property] of [
    ['meter_sum', 'sum', 'value_property'],
    ['meter_uniq', 'unique_count', 'unique_property'],
  ] as const) {
    await db
      .insertInto('meters')
      .values({
        id,
        event_name: id,
        aggregation,
        [property]: 'x',
        display_name: id,
        late_events: 'bill_next_invoice',
        created_at: CREATED,
        updated_at: CREATED,
      })
      .execute();
  }
  await db
    .insertInto('usage_rollups')
    .values([
      minute('2026-01-31T23:58:00.000Z', 2, '0.1', '0.1', '2026-01-31T23:58:30.000Z', 'b'),
      minute('2026-01-31T23:59:00.000Z', 1, '0.2', '0.2', '2026-01-31T23:59:59.999Z', 'a'),
      minute('2026-02-01T00:00:00.000Z', 3, '-1.000000000001', '5', '2026-02-01T00:00:00.000Z', 'c'),
      minute(
        '2026-02-01T00:59:00.000Z',
        1,
        '999999999999999999.5',
        '999999999999999999.5',
        '2026-02-01T00:59:00.000Z',
        'é',
      ),
      minute('2026-02-01T01:00:00.000Z', 1, '1', '1', '2026-02-01T01:00:00.000Z', 'z'),
    ])
    .execute();
  if (ON_POSTGRES) {
    await sql`create table usage_events_y2026m01 partition of usage_events for values from ('2026-01-01T00:00:00Z') to ('2026-02-01T00:00:00Z')`.execute(
      db,
    );
    await sql`create table usage_events_y2026m02 partition of usage_events for values from ('2026-02-01T00:00:00Z') to ('2026-03-01T00:00:00Z')`.execute(
      db,
    );
  }
  const event = (id: string, timestamp: string, value: string) => ({
    id,
    customer_id: MIGRATION_CUSTOMER,
    meter_id: 'meter_uniq',
    event_name: 'meter_uniq',
    transaction_id: id,
    timestamp,
    received_at: timestamp,
    value,
    properties: '{}',
  });
  await db
    .insertInto('usage_events')
    .values([
      event('e1', '2026-01-31T23:10:00.000Z', 'u1'),
      event('e2', '2026-01-31T23:50:00.000Z', 'u1'),
      event('e3', '2026-01-31T23:55:00.000Z', 'u2'),
      event('e4', '2026-02-01T00:10:00.000Z', 'u1'),
    ])
    .execute();

  await migrateToLatest(handle);

  const hourly = await db
    .selectFrom('usage_rollups_hourly')
    .selectAll()
    .where('meter_id', '=', 'meter_sum')
    .orderBy('bucket')
    .execute();
  const text = (v: unknown) => (v === null ? null : String(v));
  const iso = (v: unknown) => new Date(String(v)).toISOString();
  assert.deepEqual(
    hourly.map((r) => [
      iso(r.bucket),
      Number(r.event_count),
      text(r.value_sum),
      text(r.value_max),
      iso(r.last_timestamp),
      r.last_transaction_id,
    ]),
    [
      ['2026-01-31T23:00:00.000Z', 3, '0.3', '0.2', '2026-01-31T23:59:59.999Z', 'a'],
      [
        '2026-02-01T00:00:00.000Z',
        4,
        '999999999999999998.499999999999',
        '999999999999999999.5',
        '2026-02-01T00:59:00.000Z',
        'é',
      ],
      ['2026-02-01T01:00:00.000Z', 1, '1', '1', '2026-02-01T01:00:00.000Z', 'z'],
    ],
  );
  const daily = await db
    .selectFrom('usage_rollups_daily')
    .selectAll()
    .where('meter_id', '=', 'meter_sum')
    .orderBy('bucket')
    .execute();
  assert.deepEqual(
    daily.map((r) => [iso(r.bucket), Number(r.event_count), text(r.value_sum), text(r.last_value)]),
    [
      ['2026-01-31T00:00:00.000Z', 3, '0.3', '0.2'],
      ['2026-02-01T00:00:00.000Z', 5, '999999999999999999.499999999999', '1'],
    ],
  );
  const distinct = async (table: string) =>
    (
      await db
        .selectFrom(table)
        .select(['bucket', 'value'])
        .where('meter_id', '=', 'meter_uniq')
        .orderBy('bucket')
        .orderBy('value')
        .execute()
    ).map((r) => [iso(r.bucket), r.value]);
  assert.deepEqual(await distinct('usage_distinct_hourly'), [
    ['2026-01-31T23:00:00.000Z', 'u1'],
    ['2026-01-31T23:00:00.000Z', 'u2'],
    ['2026-02-01T00:00:00.000Z', 'u1'],
  ]);
  assert.deepEqual(await distinct('usage_distinct_daily'), [
    ['2026-01-31T00:00:00.000Z', 'u1'],
    ['2026-01-31T00:00:00.000Z', 'u2'],
    ['2026-02-01T00:00:00.000Z', 'u1'],
  ]);
});
