// db/pg-traffic.ts: BEGIN, SAVEPOINT and deferrable statements travel with the next
// statement; the traffic is counted; behaviour is the same as sending each on its own.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sql } from 'kysely';
import { buildTestApp } from '../../test/helpers/app.ts';
import { ON_POSTGRES } from '../../test/helpers/database.ts';
import { countAsWorker, executeDeferred, prefetch } from './pg-traffic.ts';

const pgOnly = { skip: !ON_POSTGRES && 'PostgreSQL only: SQLite has no round trips' };

test('a transaction of one statement costs two round trips (BEGIN travels with it, then COMMIT)', pgOnly, async (t) => {
  const { deps } = await buildTestApp(t);
  const traffic = deps.database.traffic;
  const before = { ...traffic };
  const count = await deps.db.transaction().execute(async (trx) => {
    await executeDeferred(trx, trx.insertInto('row_count_deltas').values({ name: 'events', delta: 2 }));
    const row = await trx
      .selectFrom('row_count_deltas')
      .select((eb) => eb.fn.sum<number>('delta').as('sum'))
      .executeTakeFirstOrThrow();
    return Number(row.sum);
  });
  // The deferred insert ran before the select that carried it: the select saw its row.
  assert.equal(count, 2);
  assert.deepEqual(
    { roundTrips: traffic.roundTrips - before.roundTrips, statements: traffic.statements - before.statements },
    { roundTrips: 2, statements: 4 },
  );
});

test('a transaction rolled back before anything was sent sends nothing and stores nothing', pgOnly, async (t) => {
  const { deps } = await buildTestApp(t);
  const traffic = deps.database.traffic;
  const before = { ...traffic };
  await assert.rejects(
    deps.db.transaction().execute(async (trx) => {
      await executeDeferred(trx, trx.insertInto('row_count_deltas').values({ name: 'events', delta: 1 }));
      throw new Error('changed my mind');
    }),
    /changed my mind/,
  );
  assert.equal(traffic.roundTrips, before.roundTrips);
  assert.equal((await deps.db.selectFrom('row_count_deltas').selectAll().execute()).length, 0);
});

test(
  'a deferred statement’s error is thrown by the statement it travels with, and nothing commits',
  pgOnly,
  async (t) => {
    const { deps } = await buildTestApp(t);
    await assert.rejects(
      deps.db.transaction().execute(async (trx) => {
        await executeDeferred(trx, trx.insertInto('row_counts').values({ name: 'events', count: 1 }));
        // Same primary key: the unique violation surfaces on the next statement.
        await executeDeferred(trx, trx.insertInto('row_counts').values({ name: 'events', count: 5 }));
        await trx.selectFrom('row_counts').selectAll().execute();
      }),
      (error: { code?: string }) => error.code === '23505',
    );
    assert.equal((await deps.db.selectFrom('row_counts').selectAll().execute()).length, 0);
    // The connection is usable again (the pool got it back rolled back).
    assert.equal((await sql<{ one: number }>`select 1 as one`.execute(deps.db)).rows[0]!.one, 1);
  },
);

test(
  'values written into deferred statements arrive exactly (quotes, backslashes, unicode, null, numbers)',
  pgOnly,
  async (t) => {
    const { deps } = await buildTestApp(t);
    const texts = ["it's", 'back\\slash \\x00 $1 $$', '🎉 ünïcode', '', "'; drop table events; --"];
    await deps.db.transaction().execute(async (trx) => {
      for (const [i, text] of texts.entries()) {
        await executeDeferred(
          trx,
          trx.insertInto('events').values({
            id: `evt_${i}`,
            topic: text,
            data: JSON.stringify({ text, n: -1.5, i }),
            created_at: '2026-01-15T10:00:00.000Z',
            delivered_at: null,
          }),
        );
      }
    });
    const rows = await deps.db.selectFrom('events').selectAll().orderBy('id').execute();
    assert.deepEqual(
      rows.map((row) => [row.topic, JSON.parse(row.data), row.delivered_at]),
      texts.map((text, i) => [text, { text, n: -1.5, i }, null]),
    );
  },
);

test('savepoints keep their meaning when they travel with the next statement', pgOnly, async (t) => {
  const { deps } = await buildTestApp(t);
  const trx = await deps.db.startTransaction().execute();
  await executeDeferred(trx, trx.insertInto('row_count_deltas').values({ name: 'events', delta: 1 }));
  const savepoint = await trx.savepoint('a').execute();
  await executeDeferred(savepoint, savepoint.insertInto('row_count_deltas').values({ name: 'events', delta: 10 }));
  await savepoint.rollbackToSavepoint('a').execute();
  await executeDeferred(trx, trx.insertInto('row_count_deltas').values({ name: 'events', delta: 100 }));
  await trx.commit().execute();
  const rows = await deps.db.selectFrom('row_count_deltas').select('delta').orderBy('id').execute();
  assert.deepEqual(
    rows.map((row) => Number(row.delta)),
    [1, 100],
  );
});

test(
  'a statement with quotes of its own still carries BEGIN; a `$1` inside its literal or comment stays as written',
  pgOnly,
  async (t) => {
    const { deps } = await buildTestApp(t);
    const traffic = deps.database.traffic;
    const before = { ...traffic };
    const row = await deps.db.transaction().execute(async (trx) => {
      const { rows } = await sql<{ literal: string; bound: string; quoted: string }>`
        select '$1 it''s' as literal, ${"it's $1"}::text as bound, 'x' /* $1 ' */ as "quoted"`.execute(trx);
      return rows[0]!;
    });
    assert.deepEqual(row, { literal: "$1 it's", bound: "it's $1", quoted: 'x' });
    // BEGIN travelled with the select; COMMIT alone.
    assert.equal(traffic.roundTrips - before.roundTrips, 2);
  },
);

test('a prefetched read travels after the next statement and is answered from there', pgOnly, async (t) => {
  const { deps } = await buildTestApp(t);
  const traffic = deps.database.traffic;
  const read = (trx: Parameters<typeof prefetch>[0]) =>
    trx.selectFrom('row_count_deltas').select('delta').where('name', '=', 'events').orderBy('id');
  const before = { ...traffic };
  const [prefetched, later] = await deps.db.transaction().execute(async (trx) => {
    await prefetch(trx, read(trx).compile());
    // Carries BEGIN before it and the prefetch after it: one round trip.
    await trx.insertInto('row_count_deltas').values({ name: 'events', delta: 7 }).execute();
    const afterCarrier = traffic.roundTrips;
    const first = await read(trx).execute();
    assert.equal(traffic.roundTrips, afterCarrier, 'the prefetched read costs no round trip');
    // Once answered (or once anything else is sent) it is read again, as of now.
    await trx.insertInto('row_count_deltas').values({ name: 'events', delta: 8 }).execute();
    return [first, await read(trx).execute()];
  });
  assert.deepEqual(
    prefetched.map((row) => Number(row.delta)),
    [7],
  );
  assert.deepEqual(
    later.map((row) => Number(row.delta)),
    [7, 8],
  );
  // insert+BEGIN+prefetch, insert, read, COMMIT.
  assert.deepEqual(
    { roundTrips: traffic.roundTrips - before.roundTrips, statements: traffic.statements - before.statements },
    { roundTrips: 4, statements: 6 },
  );
});

test('a prefetched answer is dropped when another statement is sent before it is asked for', pgOnly, async (t) => {
  const { deps } = await buildTestApp(t);
  const rows = await deps.db.transaction().execute(async (trx) => {
    const read = trx.selectFrom('row_count_deltas').select('delta').where('name', '=', 'events');
    await prefetch(trx, read.compile());
    await trx.insertInto('row_count_deltas').values({ name: 'events', delta: 1 }).execute();
    await trx.insertInto('row_count_deltas').values({ name: 'events', delta: 2 }).execute();
    return read.execute();
  });
  assert.deepEqual(rows.map((row) => Number(row.delta)).sort(), [1, 2]);
});

test('a prefetch outside a transaction, or on SQLite, sends nothing and changes nothing', async (t) => {
  const { deps } = await buildTestApp(t);
  const traffic = deps.database.traffic;
  const before = { ...traffic };
  await deps.db.connection().execute(async (db) => {
    await prefetch(db as never, db.selectFrom('row_count_deltas').selectAll().compile());
  });
  assert.equal(traffic.roundTrips, before.roundTrips);
  const rows = await deps.db.transaction().execute(async (trx) => {
    await prefetch(trx, trx.selectFrom('row_count_deltas').select('delta').compile());
    await trx.insertInto('row_count_deltas').values({ name: 'events', delta: 3 }).execute();
    return trx.selectFrom('row_count_deltas').select('delta').execute();
  });
  assert.deepEqual(
    rows.map((row) => Number(row.delta)),
    [3],
  );
});

test('work run inside countAsWorker counts as the worker’s too', pgOnly, async (t) => {
  const { deps } = await buildTestApp(t);
  const traffic = deps.database.traffic;
  const before = { total: traffic.roundTrips, worker: traffic.worker.roundTrips };
  await sql`select 1`.execute(deps.db);
  await countAsWorker(async () => {
    await new Promise((resolve) => setTimeout(resolve, 0));
    await sql`select 2`.execute(deps.db);
  });
  assert.deepEqual(
    { total: traffic.roundTrips - before.total, worker: traffic.worker.roundTrips - before.worker },
    { total: 2, worker: 1 },
  );
});
