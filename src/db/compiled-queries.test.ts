// compiledQuery / compiledQueries: a shape is built and compiled once per database and run
// with new values, on SQLite and PostgreSQL, inside and outside transactions.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sql } from 'kysely';
import { buildTestApp } from '../../test/helpers/app.ts';
import { compiledQueries, compiledQuery, type Param } from './compiled-queries.ts';

test('a compiled shape is built once and runs with each call’s values, in and out of transactions', async (t) => {
  const { deps } = await buildTestApp(t);
  const { db } = deps;
  let builds = 0;
  const countByName = compiledQuery((db, param: Param<{ name: string }>) => {
    builds += 1;
    return db.selectFrom('row_counts').select('count').where('name', '=', param('name'));
  });
  const upsert = compiledQuery((db, param: Param<{ name: string; count: number }>) =>
    db
      .insertInto('row_counts')
      .values({ name: param('name'), count: param('count') })
      .onConflict((oc) => oc.column('name').doUpdateSet({ count: param('count') })),
  );
  await upsert.executeWrite(db, { name: 'payments', count: 7 });
  await db.transaction().execute(async (trx) => {
    await upsert.executeWrite(trx, { name: 'refunds', count: 3 });
    assert.deepEqual(await countByName.execute(trx, { name: 'refunds' }), [{ count: 3 }]);
  });
  assert.equal((await countByName.executeTakeFirst(db, { name: 'payments' }))?.count, 7);
  assert.equal((await countByName.executeTakeFirst(db, { name: 'refunds' }))?.count, 3);
  assert.equal(await countByName.executeTakeFirst(db, { name: 'events' }), undefined);
  assert.equal(builds, 1, 'built and compiled once for this database, transactions included');

  // The same values, one SQL text: the parameters change, the statement does not.
  const first = countByName.compile(db, { name: 'payments' });
  const second = countByName.compile(db, { name: 'refunds' });
  assert.equal(first.sql, second.sql);
  assert.deepEqual([first.parameters, second.parameters], [['payments'], ['refunds']]);
});

test('limit/offset and sql template values are parameters; shape families compile once per key', async (t) => {
  const { deps } = await buildTestApp(t);
  const { db } = deps;
  for (const [name, count] of [
    ['payments', 1],
    ['refunds', 2],
    ['events', 3],
  ] as const) {
    await db.insertInto('row_counts').values({ name, count }).execute();
  }
  const keys: string[] = [];
  const ordered = compiledQueries(
    (direction: 'asc' | 'desc') => {
      keys.push(direction);
      return direction;
    },
    (db, param: Param<{ limit: number; offset: number; above: number }>, direction) =>
      db
        .selectFrom('row_counts')
        .select('name')
        .where(sql<boolean>`count > ${param('above')}`)
        .orderBy('count', direction)
        .limit(param('limit'))
        .offset(param('offset')),
  );
  const names = async (direction: 'asc' | 'desc', values: { limit: number; offset: number; above: number }) =>
    (await ordered.get(direction).execute(db, values)).map((row) => row.name);
  assert.deepEqual(await names('asc', { limit: 2, offset: 0, above: 0 }), ['payments', 'refunds']);
  assert.deepEqual(await names('asc', { limit: 2, offset: 1, above: 0 }), ['refunds', 'events']);
  assert.deepEqual(await names('desc', { limit: 5, offset: 0, above: 1 }), ['events', 'refunds']);
  assert.deepEqual(await names('desc', { limit: 1, offset: 0, above: 2 }), ['events']);
  assert.equal(ordered.get('asc').compile(db, { limit: 1, offset: 0, above: 0 }).sql.includes(' asc'), true);
  assert.equal(ordered.get('desc').compile(db, { limit: 1, offset: 0, above: 0 }).sql.includes(' desc'), true);
});

test('a placeholder that is not bound as a value, or a missing value, is refused', async (t) => {
  const { deps } = await buildTestApp(t);
  const { db } = deps;
  // Kysely refuses to write a placeholder into the SQL text (sql.lit); one that never reaches
  // the query at all is refused here, so a value can never be silently ignored.
  const literal = compiledQuery((db, param: Param<{ name: string }>) =>
    db
      .selectFrom('row_counts')
      .select('count')
      .where('name', '=', sql.lit(param('name'))),
  );
  await assert.rejects(literal.execute(db, { name: 'payments' }));
  const dropped = compiledQuery((db, param: Param<{ name: string }>) => {
    param('name');
    return db.selectFrom('row_counts').select('count').where('name', '=', 'payments');
  });
  await assert.rejects(dropped.execute(db, { name: 'refunds' }), /parameter "name" is not bound as a value/);
  const shape = compiledQuery((db, param: Param<{ name: string }>) =>
    db.selectFrom('row_counts').select('count').where('name', '=', param('name')),
  );
  await assert.rejects(shape.execute(db, {} as { name: string }), /no value for parameter "name"/);
});

test('executeRead: the committed rows, never an uncommitted one; inside a transaction its own', async (t) => {
  const { deps } = await buildTestApp(t);
  const { db } = deps;
  const countByName = compiledQuery((db, param: Param<{ name: string }>) =>
    db.selectFrom('row_counts').select('count').where('name', '=', param('name')),
  );
  const upsert = compiledQuery((db, param: Param<{ name: string; count: number }>) =>
    db
      .insertInto('row_counts')
      .values({ name: param('name'), count: param('count') })
      .onConflict((oc) => oc.column('name').doUpdateSet({ count: param('count') })),
  );
  await upsert.executeWrite(db, { name: 'payments', count: 7 });
  assert.equal((await countByName.executeRead(db, { name: 'payments' }))[0]?.count, 7);

  // While a transaction holds the connection with an uncommitted write, a read on the
  // database waits for it (as Kysely's own queries do) and sees the committed value.
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  let wrote!: () => void;
  const written = new Promise<void>((resolve) => (wrote = resolve));
  const transaction = db.transaction().execute(async (trx) => {
    await upsert.executeWrite(trx, { name: 'payments', count: 8 });
    wrote();
    await held;
    // Inside the transaction, its own write is visible (through the transaction).
    assert.equal((await countByName.executeRead(trx, { name: 'payments' }))[0]?.count, 8);
  });
  await written;
  const during = countByName.executeRead(db, { name: 'payments' });
  if (deps.database.dialect === 'sqlite') {
    // One connection: the read waits for the transaction, then sees its commit.
    release();
    await transaction;
    assert.equal((await during)[0]?.count, 8, 'read after the commit, never mid-transaction');
    assert.equal((await countByName.executeRead(db, { name: 'payments' }))[0]?.count, 8);
  } else {
    // A pool: the read runs beside the transaction and sees the last committed value.
    assert.equal((await during)[0]?.count, 7, 'never the uncommitted row');
    release();
    await transaction;
  }
});
