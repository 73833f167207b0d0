import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type Kysely, sql } from 'kysely';
import { buildTestApp } from '../../test/helpers/app.ts';
import { createCustomer } from '../../test/helpers/factories.ts';
import { openDatabase } from '../db/connect.ts';
import type { Database } from '../db/database.ts';
import { defineList, parseListParams, simpleListOf } from './lists.ts';

test('list defaults: page 0, limit 10, created_at desc', () => {
  assert.deepEqual(parseListParams({}), {
    page: 0,
    limit: 10,
    offset: 0,
    sortBy: 'created_at',
    sortOrder: 'desc',
  });
});

test('page: negative or not a number → 0; offset = page × limit', () => {
  assert.equal(parseListParams({ page: '-1' }).page, 0);
  assert.equal(parseListParams({ page: 'two' }).page, 0);
  assert.equal(parseListParams({ page: '1.5' }).page, 0);
  assert.equal(parseListParams({ page: '3', limit: '20' }).offset, 60);
});

test('limit: missing/invalid → 10, above 100 → 100', () => {
  assert.equal(parseListParams({ limit: '' }).limit, 10);
  assert.equal(parseListParams({ limit: 'ten' }).limit, 10);
  assert.equal(parseListParams({ limit: '0' }).limit, 10);
  assert.equal(parseListParams({ limit: '101' }).limit, 100);
  assert.equal(parseListParams({ limit: '25' }).limit, 25);
});

interface ItemsDatabase {
  items: { id: string; created_at: string; name: string; status: string; archived_at: string | null };
}

/** An in-memory table of `rows` (id, created_at, name, status, archived_at) for the lists below. */
async function itemsTable(t: { after: (fn: () => Promise<void>) => void }) {
  const handle = openDatabase({ kind: 'sqlite', path: ':memory:' });
  t.after(() => handle.close());
  const db = handle.db as unknown as Kysely<ItemsDatabase>;
  await sql`create table items (id text primary key, created_at text, name text, status text, archived_at text)`.execute(
    db,
  );
  await db
    .insertInto('items')
    .values([
      { id: 'a', created_at: '2024-01-02', name: 'zed', status: 'on', archived_at: null },
      { id: 'b', created_at: '2024-01-01', name: 'amy', status: 'off', archived_at: '2024-02-01' },
      { id: 'c', created_at: '2024-01-02', name: 'bob', status: 'on', archived_at: null },
      { id: 'd', created_at: '2024-01-03', name: 'cat', status: 'on', archived_at: null },
    ])
    .execute();
  return db;
}

const ids = (rows: { id: string }[]) => rows.map((r) => r.id);

const allItems = defineList({
  // The items table is not in Database.
  from: (db) => (db as unknown as Kysely<ItemsDatabase>).selectFrom('items'),
  select: (q) => q.selectAll(),
  sortable: ['created_at', 'name'],
  map: ids,
});

test('a list orders by the sort field, then by id the same way, and cuts the page', async (t) => {
  const db = (await itemsTable(t)) as unknown as Kysely<Database>;
  const page = (query: Record<string, string>) => allItems.page(db, parseListParams(query));
  assert.deepEqual(await page({}), { data: ['d', 'c', 'a', 'b'], meta: { total: 4, page: 0, limit: 10 } });
  assert.deepEqual((await page({ sort_order: 'asc' })).data, ['b', 'a', 'c', 'd']);
  assert.deepEqual((await page({ sort_by: 'name', sort_order: 'asc' })).data, ['b', 'c', 'd', 'a']);
  assert.deepEqual(await page({ limit: '2', page: '1' }), { data: ['a', 'b'], meta: { total: 4, page: 1, limit: 2 } });
  // A field off the whitelist sorts by the first sortable field.
  assert.deepEqual((await page({ sort_by: 'status' })).data, ['d', 'c', 'a', 'b']);
});

test('a list without a kept total counts the filtered rows; simpleListOf drops meta', async (t) => {
  const db = (await itemsTable(t)) as unknown as Kysely<Database>;
  const page = (filters: Record<string, string | { isNull: boolean } | undefined>, query = {}) =>
    allItems.page(db, parseListParams(query), filters);
  assert.deepEqual(await page({ status: 'on' }), { data: ['d', 'c', 'a'], meta: { total: 3, page: 0, limit: 10 } });
  assert.deepEqual((await page({ archived_at: { isNull: false } })).data, ['b']);
  assert.deepEqual((await page({ archived_at: { isNull: true }, name: 'bob' })).data, ['c']);
  const one = await page({ status: 'on' }, { limit: '1' });
  assert.deepEqual(one, { data: ['d'], meta: { total: 3, page: 0, limit: 1 } });
  assert.deepEqual(simpleListOf(one), { data: ['d'], total: 3 });
});

// A compiled list over the live customers, with two filters (as the services define theirs).
let builds = 0;
const customers = defineList({
  from: (db) => {
    builds += 1;
    return db.selectFrom('customers').where('deleted_at', 'is', null);
  },
  select: (query) => query.select(['id', 'name']),
  sortable: ['created_at', 'name'],
  keptTotal: 'customers',
  map: (rows) => rows.map((row) => row.name),
});

test('defineList: the page and its kept total in one statement, a past-the-end page still has its total', async (t) => {
  const app = await buildTestApp(t);
  const { db } = app.deps;
  for (const name of ['ann', 'bob', 'cy']) {
    await createCustomer(app, { name, phone: name === 'bob' ? null : '+2348000000000' });
    app.clock.advance(1000);
  }
  const page = (query: Record<string, string>, filters = {}) => customers.page(db, parseListParams(query), filters);
  assert.deepEqual(await page({ limit: '2' }), { data: ['cy', 'bob'], meta: { total: 3, page: 0, limit: 2 } });
  assert.deepEqual(await page({ limit: '2', page: '1' }), { data: ['ann'], meta: { total: 3, page: 1, limit: 2 } });
  assert.deepEqual(await page({ limit: '2', page: '7' }), { data: [], meta: { total: 3, page: 7, limit: 2 } });
  assert.deepEqual((await page({ sort_by: 'name', sort_order: 'asc' })).data, ['ann', 'bob', 'cy']);
  assert.deepEqual((await page({ sort_by: 'nope' })).data, ['cy', 'bob', 'ann']);
  // Filters: counted, not the kept total; a scalar is a parameter, is-null is structure.
  assert.deepEqual(await page({}, { name: 'bob' }), { data: ['bob'], meta: { total: 1, page: 0, limit: 10 } });
  assert.deepEqual(await page({}, { name: 'cy' }), { data: ['cy'], meta: { total: 1, page: 0, limit: 10 } });
  assert.deepEqual((await page({}, { phone: { isNull: false } })).data, ['cy', 'ann']);
  assert.deepEqual(await page({}, { phone: { isNull: true }, name: 'ann' }), {
    data: [],
    meta: { total: 0, page: 0, limit: 10 },
  });
  assert.deepEqual((await page({}, { name: undefined })).meta.total, 3);
  // Built once per shape: unfiltered × 3 sort variants used, plus the filter shapes (page and
  // count each), never once per request.
  const before = builds;
  for (let i = 0; i < 5; i += 1) await page({ limit: '2' }, { name: 'bob' });
  assert.equal(builds, before);
});
