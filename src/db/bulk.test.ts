import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CompiledQuery, sql } from 'kysely';
import { buildTestApp } from '../../test/helpers/app.ts';
import { insertRows, inList, rowsTable } from './bulk.ts';

const eventRow = (i: number) => ({
  id: `evt_bulk${String(i).padStart(4, '0')}`,
  topic: i % 2 === 0 ? 'invoice.created' : 'payment.succeeded',
  // Values a statement's text must never carry: quotes, a NUL, odd Unicode, a placeholder.
  data: JSON.stringify({ n: i, text: `it's "${i}" \u0000 ?, $1 \u202e👩‍💻` }),
  created_at: new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString(),
  emitted_at: new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString(),
  actor: null,
  customer_id: i % 3 === 0 ? null : `cus_${i}`,
  delivered_at: null,
});

test('insertRows writes every row once, whatever the batch size, with the values unchanged', async (t) => {
  const { deps } = await buildTestApp(t);
  const { db } = deps;
  // 85 = 64 + 16 + 4 + 1: every fixed shape once on SQLite.
  for (const size of [0, 1, 85]) {
    const rows = Array.from({ length: size }, (_, i) => eventRow(1_000 * size + i));
    await db.transaction().execute((trx) => insertRows(trx, 'events', rows));
    const stored = await db
      .selectFrom('events')
      .select(['id', 'topic', 'data', 'created_at', 'emitted_at', 'actor', 'customer_id', 'delivered_at'])
      .where('id', 'like', `evt_bulk%`)
      .where('id', '>=', `evt_bulk${String(1_000 * size).padStart(4, '0')}`)
      .where('id', '<', `evt_bulk${String(1_000 * size + 1_000).padStart(4, '0')}`)
      .orderBy('id')
      .execute();
    assert.deepEqual(
      stored.map((row) => ({
        ...row,
        created_at: new Date(row.created_at).toISOString(),
        emitted_at: new Date(row.emitted_at!).toISOString(),
      })),
      rows,
      `${size} rows`,
    );
  }
  // A duplicate key fails the whole statement: nothing of the batch stays.
  await assert.rejects(db.transaction().execute((trx) => insertRows(trx, 'events', [eventRow(5), eventRow(1_000)])));
  assert.equal((await db.selectFrom('events').select('id').where('id', '=', 'evt_bulk0005').execute()).length, 0);
});

test('insertRows refuses a column name that is not a plain identifier', async (t) => {
  const { deps } = await buildTestApp(t);
  const bad = { ...eventRow(1), 'id" = 1; --': 'x' } as unknown as ReturnType<typeof eventRow>;
  await assert.rejects(
    deps.db.transaction().execute((trx) => insertRows(trx, 'events', [bad])),
    /bad column/,
  );
});

test('inList matches exactly the listed values, for none, one and many, in one statement text', async (t) => {
  const { deps } = await buildTestApp(t);
  const { db } = deps;
  const rows = Array.from({ length: 40 }, (_, i) => eventRow(i));
  await db.transaction().execute((trx) => insertRows(trx, 'events', rows));
  const texts = new Set<string>();
  for (const picked of [[], [rows[3]!.id], rows.filter((_, i) => i % 3 === 1).map((row) => row.id)]) {
    // A value that looks like SQL or JSON is only ever a value.
    const asked = [...picked, `x' or '1'='1`, '"]', 'evt_missing'];
    const query = db
      .selectFrom('events')
      .select('id')
      .where(inList(db, 'id', asked))
      .orderBy('id');
    texts.add(query.compile().sql);
    assert.deepEqual(
      (await query.execute()).map((row) => row.id),
      [...picked].sort(),
    );
  }
  assert.equal(texts.size, 1, 'one text for every list length');
  // Updates take it too (the fan-out marks).
  const marked = await db
    .updateTable('events')
    .set({ delivered_at: '2026-02-01T00:00:00.000Z' })
    .where(inList(db, 'id', [rows[0]!.id, rows[1]!.id]))
    .executeTakeFirst();
  assert.equal(Number(marked.numUpdatedRows), 2);
  const raw = await db.executeQuery(
    CompiledQuery.raw('select count(*) as n from events where delivered_at is not null'),
  );
  assert.equal(Number((raw.rows[0] as { n: number | string }).n), 2);
});

test('rowsTable gives back every row in order, nulls and hostile text as values, in one statement text', async (t) => {
  const { deps } = await buildTestApp(t);
  const { db } = deps;
  const texts = new Set<string>();
  const lists: (string | null)[][][] = [
    [],
    [['a', null]],
    [
      ['b', `x' or '1'='1`],
      ['"]', '?, $1 ;--'],
      [null, '👩‍💻 \u202e'],
      ['a', 'a'],
    ],
  ];
  for (const rows of lists) {
    const query = sql<{
      k: string | null;
      v: string | null;
    }>`select v.k, v.v from ${rowsTable(db, 'v', ['k', 'v'], rows)}`;
    texts.add(query.compile(db).sql);
    const { rows: read } = await query.execute(db);
    assert.deepEqual(
      read.map((row) => [row.k, row.v]),
      rows,
    );
  }
  assert.equal(texts.size, 1, 'one text for every number of rows');
});
