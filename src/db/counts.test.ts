import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp } from '../../test/helpers/app.ts';
import { ON_POSTGRES } from '../../test/helpers/database.ts';
import { addToCount, deferCounts, flushCounts, foldCountDeltas, readAllCounts, readCount } from './counts.ts';

test('totals stay exact under concurrent writers, before and after the worker folds deltas', async (t) => {
  const { deps } = await buildTestApp(t);
  const { db } = deps;
  const add = (name: 'payments' | 'refunds', delta: number) =>
    db.transaction().execute((trx) => addToCount(trx, name, delta));
  // Overlapping transactions on PostgreSQL (none waits on another); one by one on SQLite.
  await Promise.all(Array.from({ length: 60 }, () => add('payments', 1)));
  await add('payments', -10);
  await add('refunds', 7);
  assert.equal(await readCount(db, 'payments'), 50);
  assert.equal(await readCount(db, 'refunds'), 7);
  assert.equal(await readCount(db, 'customers'), 0);

  const pending = await db.selectFrom('row_count_deltas').select('id').execute();
  assert.equal(pending.length, ON_POSTGRES ? 62 : 0, 'PostgreSQL appends deltas; SQLite updates the counter');

  // Folding while writers keep adding: nothing lost, nothing counted twice.
  const [folded] = await Promise.all([foldCountDeltas(db), ...Array.from({ length: 20 }, () => add('payments', 1))]);
  if (ON_POSTGRES) assert.ok(folded >= 62 && folded <= 82, `folded ${folded}`);
  else assert.equal(folded, 0);
  assert.equal(await readCount(db, 'payments'), 70);
  await foldCountDeltas(db);
  assert.equal(await readCount(db, 'payments'), 70);
  assert.equal(await readCount(db, 'refunds'), 7);
  if (ON_POSTGRES) assert.equal((await db.selectFrom('row_count_deltas').select('id').execute()).length, 0);
  assert.deepEqual(Object.fromEntries(await readAllCounts(db)), { payments: 70, refunds: 7 });
});

test('deferred totals move once at the flush, in the same transaction; a rollback drops them', async (t) => {
  const { deps } = await buildTestApp(t);
  const { db } = deps;
  await db.transaction().execute(async (trx) => {
    deferCounts(trx);
    for (let i = 0; i < 5; i += 1) await addToCount(trx, 'payments', 1);
    await addToCount(trx, 'events', 3);
    await addToCount(trx, 'refunds', 2);
    await addToCount(trx, 'refunds', -2);
    assert.equal(await readCount(trx, 'payments'), 0, 'nothing written before the flush');
    await flushCounts(trx);
    assert.equal(await readCount(trx, 'payments'), 5);
    // After the flush the transaction counts directly again.
    await addToCount(trx, 'payments', 1);
    assert.equal(await readCount(trx, 'payments'), 6);
  });
  assert.deepEqual(Object.fromEntries(await readAllCounts(db)), { payments: 6, events: 3 });
  if (ON_POSTGRES) {
    const deltas = await db.selectFrom('row_count_deltas').select(['name', 'delta']).orderBy('id').execute();
    assert.deepEqual(deltas, [
      { name: 'payments', delta: 5 },
      { name: 'events', delta: 3 },
      { name: 'payments', delta: 1 },
    ]);
  }

  await assert.rejects(
    db.transaction().execute(async (trx) => {
      deferCounts(trx);
      await addToCount(trx, 'payments', 100);
      await flushCounts(trx);
      throw new Error('roll back');
    }),
    /roll back/,
  );
  assert.equal(await readCount(db, 'payments'), 6);
});
