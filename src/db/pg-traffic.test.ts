// db/pg-traffic.ts: BEGIN, SAVEPOINT and db/'s answerless statements travel in front of the
// next statement, values always bound; the traffic is counted; behaviour is the same as
// sending each on its own.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sql } from 'kysely';
import { buildTestApp } from '../../test/helpers/app.ts';
import { createTestDatabase, ON_POSTGRES, TEST_DATABASE_URL } from '../../test/helpers/database.ts';
import { openDatabase } from './connect.ts';
import { countAsWorker, sendWithNextStatement, StatementNames } from './pg-traffic.ts';
import { transactionWithRetry } from './transaction.ts';

const pgOnly = { skip: !ON_POSTGRES && 'PostgreSQL only: SQLite has no round trips' };

test('a transaction of one statement costs two round trips (BEGIN travels with it, then COMMIT)', pgOnly, async (t) => {
  const { deps } = await buildTestApp(t);
  const traffic = deps.database.traffic;
  const before = { ...traffic };
  const count = await deps.db.transaction().execute(async (trx) => {
    await sendWithNextStatement(trx, trx.insertInto('row_count_deltas').values({ name: 'events', delta: 2 }));
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
      await sendWithNextStatement(trx, trx.insertInto('row_count_deltas').values({ name: 'events', delta: 1 }));
      throw new Error('changed my mind');
    }),
    /changed my mind/,
  );
  assert.equal(traffic.roundTrips, before.roundTrips);
  assert.equal((await deps.db.selectFrom('row_count_deltas').selectAll().execute()).length, 0);
});

test(
  'an answerless statement’s error is thrown by the statement it travels with, and nothing commits',
  pgOnly,
  async (t) => {
    const { deps } = await buildTestApp(t);
    await assert.rejects(
      deps.db.transaction().execute(async (trx) => {
        await sendWithNextStatement(trx, trx.insertInto('row_counts').values({ name: 'events', count: 1 }));
        // Same primary key: the unique violation surfaces on the next statement.
        await sendWithNextStatement(trx, trx.insertInto('row_counts').values({ name: 'events', count: 5 }));
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
  'values arrive exactly as bound parameters (quotes, backslashes, unicode, null, numbers), never in the SQL text',
  pgOnly,
  async (t) => {
    const { deps } = await buildTestApp(t);
    const texts = ["it's", 'back\\slash \\x00 $1 $$', '🎉 ünïcode', '', "'; drop table events; --"];
    const sent: string[] = [];
    t.after(deps.database.watchStatements((text) => sent.push(text)));
    await deps.db.transaction().execute(async (trx) => {
      for (const [i, text] of texts.entries()) {
        await sendWithNextStatement(
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
    assert.ok(
      sent.some((text) => text.includes('insert into "events"')),
      'the inserts were seen on the wire',
    );
    for (const text of sent) {
      assert.ok(!text.includes('evt_') && !text.includes('-1.5') && !text.includes('2026-01-15'), text);
    }
  },
);

test('savepoints keep their meaning when they travel with the next statement', pgOnly, async (t) => {
  const { deps } = await buildTestApp(t);
  const trx = await deps.db.startTransaction().execute();
  await sendWithNextStatement(trx, trx.insertInto('row_count_deltas').values({ name: 'events', delta: 1 }));
  const savepoint = await trx.savepoint('a').execute();
  await sendWithNextStatement(
    savepoint,
    savepoint.insertInto('row_count_deltas').values({ name: 'events', delta: 10 }),
  );
  await savepoint.rollbackToSavepoint('a').execute();
  await sendWithNextStatement(trx, trx.insertInto('row_count_deltas').values({ name: 'events', delta: 100 }));
  await trx.commit().execute();
  const rows = await deps.db.selectFrom('row_count_deltas').select('delta').orderBy('id').execute();
  assert.deepEqual(
    rows.map((row) => Number(row.delta)),
    [1, 100],
  );
});

test('an answerless statement outside a transaction, or on SQLite, simply runs', async (t) => {
  const { deps } = await buildTestApp(t);
  await sendWithNextStatement(deps.db, deps.db.insertInto('row_count_deltas').values({ name: 'events', delta: 4 }));
  const rows = await deps.db.selectFrom('row_count_deltas').select('delta').execute();
  assert.deepEqual(
    rows.map((row) => Number(row.delta)),
    [4],
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

test('a text is named the second time it is sent, up to a bound; stale() gives fresh names', () => {
  const names = new StatementNames();
  assert.equal(names.nameOf('select $1'), undefined);
  const name = names.nameOf('select $1');
  assert.ok(name);
  assert.equal(names.nameOf('select $1'), name);
  for (let i = 0; i < 600; i++) {
    names.nameOf(`select ${i}, $1`);
    names.nameOf(`select ${i}, $1`);
  }
  // Past the bound, new texts stay unnamed; named ones keep their name.
  assert.equal(names.nameOf('select 1000, $1'), undefined);
  assert.equal(names.nameOf('select 1000, $1'), undefined);
  assert.equal(names.nameOf('select $1'), name);
  names.stale();
  assert.equal(names.nameOf('select $1'), undefined);
  const fresh = names.nameOf('select $1');
  assert.ok(fresh && fresh !== name);
});

test(
  'a statement sent again runs prepared; a migration changing its columns meanwhile costs no failure outside a transaction and one rerun inside',
  pgOnly,
  async (t) => {
    const database = await createTestDatabase();
    t.after(() => database.drop());
    // One connection: the prepared statement and the migration meet on it.
    const handle = openDatabase({ kind: 'postgres', url: TEST_DATABASE_URL }, { schema: database.schema, poolSize: 1 });
    t.after(() => handle.close());
    const { db } = handle;
    await sql`create table prepared_probe (id text primary key)`.execute(db);
    await sql`insert into prepared_probe (id) values ('a')`.execute(db);
    const read = async (on: typeof db) =>
      (await sql<Record<string, unknown>>`select * from prepared_probe where id = ${'a'}`.execute(on)).rows;
    // Once unnamed, then prepared, then run prepared (its row shape reused): the same rows.
    for (let i = 0; i < 3; i++) assert.deepEqual(await read(db), [{ id: 'a' }]);
    const prepared = await sql<{ statement: string }>`select statement from pg_prepared_statements`.execute(db);
    assert.deepEqual(
      prepared.rows.map((row) => row.statement),
      ['select * from prepared_probe where id = $1'],
    );

    await sql`alter table prepared_probe add column note text not null default 'x'`.execute(db);
    assert.deepEqual(await read(db), [{ id: 'a', note: 'x' }]);

    await read(db);
    await read(db);
    await sql`alter table prepared_probe add column more integer not null default 2`.execute(db);
    let runs = 0;
    const rows = await transactionWithRetry(db, async (trx) => {
      runs++;
      return read(trx);
    });
    assert.deepEqual(rows, [{ id: 'a', note: 'x', more: 2 }]);
    assert.equal(runs, 2);
  },
);
