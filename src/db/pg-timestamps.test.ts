import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sql } from 'kysely';
import { buildTestApp } from '../../test/helpers/app.ts';
import { ON_POSTGRES } from '../../test/helpers/database.ts';
import { readPgTimestamp } from './pg-timestamps.ts';

test('PostgreSQL timestamp text reads as the same instant in every session time zone and year', () => {
  const cases: [string, string][] = [
    ['2026-01-15 10:00:00.123456+00', '2026-01-15T10:00:00.123Z'],
    ['2026-01-15 10:00:00.1+00', '2026-01-15T10:00:00.100Z'],
    ['2026-01-15 10:00:00.000999+00', '2026-01-15T10:00:00.000Z'],
    ['2026-01-15 10:00:00+00', '2026-01-15T10:00:00.000Z'],
    ['2026-01-15 11:00:00.12+01', '2026-01-15T10:00:00.120Z'],
    ['2026-01-15 04:30:00-05:30', '2026-01-15T10:00:00.000Z'],
    // Africa/Lagos before 1919: local mean time, an offset in seconds.
    ['1900-01-01 00:13:35+00:13:35', '1900-01-01T00:00:00.000Z'],
    // A zero-padded year below 1000, which `Date` reads as 2001.
    ['0001-01-01 00:00:00+00', '0001-01-01T00:00:00.000Z'],
    ['0001-01-01 00:13:35+00:13:35', '0001-01-01T00:00:00.000Z'],
    ['9999-12-31 23:59:59.999+00', '9999-12-31T23:59:59.999Z'],
    // `timestamp` without a zone: UTC.
    ['1970-01-01 00:00:00', '1970-01-01T00:00:00.000Z'],
    // Never written by the service; read as the nearest bound rather than failing a list.
    ['infinity', '9999-12-31T23:59:59.999Z'],
    ['-infinity', '1970-01-01T00:00:00.000Z'],
    ['0044-03-15 00:00:00+00 BC', '1970-01-01T00:00:00.000Z'],
    ['10000-01-01 00:00:00+00', '9999-12-31T23:59:59.999Z'],
  ];
  for (const [text, iso] of cases) assert.equal(readPgTimestamp(text), iso, text);
  assert.throws(() => readPgTimestamp('01/15/2026 10:00:00 UTC'), /DateStyle must be ISO/);
});

test('list reads of old instants do not depend on the PostgreSQL session time zone', async (t) => {
  const first = await buildTestApp(t, { env: { TEST_CLOCKS: 'true' } });
  const { db } = first.deps.database;
  const stored = ['1900-01-01T00:00:00.000Z', '1970-01-01T00:00:00.000Z', '2026-01-15T10:00:00.000Z'];
  if (ON_POSTGRES) stored.unshift('0001-01-01T00:00:00.000Z');
  // Written directly: the API refuses instants before 1970 (SPEC §2), rows from elsewhere may hold them.
  for (const [i, time] of stored.entries()) {
    await db
      .insertInto('test_clocks')
      .values({
        id: `clock_01JD3Q7Z8X9Y0A1B2C3D4E5F6${i}`,
        name: null,
        frozen_time: time,
        reached_time: time,
        status: 'ready',
        lease_token: null,
        lease_expires_at: null,
        created_at: '2026-01-15T10:00:00.000Z',
        updated_at: '2026-01-15T10:00:00.000Z',
      })
      .execute();
  }
  const apps = [first];
  if (ON_POSTGRES) {
    const { rows } = await sql<{ tz: string }>`select current_setting('TimeZone') as tz`.execute(db);
    assert.equal(rows[0]?.tz, 'UTC', 'the service sets its sessions to UTC');
    // A second instance whose sessions start in Africa/Lagos, as on a server configured so:
    // options in the URL replace the service's own (pg's rule), time zone included.
    const url = new URL(first.deps.config.database.kind === 'postgres' ? first.deps.config.database.url : '');
    url.searchParams.set('options', `-c TimeZone=Africa/Lagos -c search_path=${first.deps.database.schema}`);
    const lagos = await buildTestApp(t, {
      sameDatabaseAs: first,
      env: { TEST_CLOCKS: 'true', DATABASE_URL: url.toString() },
    });
    const zone = await sql<{ tz: string }>`select current_setting('TimeZone') as tz`.execute(lagos.deps.database.db);
    assert.equal(zone.rows[0]?.tz, 'Africa/Lagos');
    apps.push(lagos);
  }
  for (const app of apps) {
    const list = await app.request('GET', '/api/test-clocks?sort_by=frozen_time&sort_order=asc');
    assert.equal(list.status, 200, list.text);
    assert.deepEqual(
      list.body.data.map((c: any) => c.frozen_time),
      stored,
    );
    const one = await app.request('GET', '/api/test-clocks/clock_01JD3Q7Z8X9Y0A1B2C3D4E5F60');
    assert.equal(one.body.frozen_time, stored[0]);
  }
});
