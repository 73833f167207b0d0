// The console's customer finder (customers.search.ts): prefixes of the normalised email and
// of the name, keyset pages that never repeat or skip a customer, deleted customers left out,
// and the index each search uses.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type Kysely, sql } from 'kysely';
import type { Database } from '../../db/database.ts';
import { buildTestApp } from '../../../test/helpers/app.ts';
import { ON_POSTGRES } from '../../../test/helpers/database.ts';
import { createCustomer } from '../../../test/helpers/factories.ts';
import { searchCustomers } from './customers.search.ts';

test('an email prefix finds customers whatever the case; pages of 2 walk every match once, in order', async (t) => {
  const app = await buildTestApp(t);
  const ids = [];
  for (const email of ['ADA@a.example', 'ada.b@a.example', 'Ädä@a.example', 'adam@b.example', 'bob@a.example']) {
    ids.push((await createCustomer(app, { email })).id);
  }
  const seen: string[] = [];
  let cursor: string | undefined;
  for (;;) {
    const page = await searchCustomers(app.deps.db, { query: 'Ada', field: 'email', cursor, limit: 2 });
    seen.push(...page.data.map((customer) => customer.email));
    if (!page.next) break;
    cursor = page.next;
  }
  // In the order of the normalised email: '.' sorts before '@'.
  assert.deepEqual(seen, ['ada.b@a.example', 'ADA@a.example', 'adam@b.example']);
  const umlaut = await searchCustomers(app.deps.db, { query: 'ÄD', field: 'email', cursor: undefined, limit: 10 });
  assert.deepEqual(
    umlaut.data.map((c) => c.email),
    ['Ädä@a.example'],
  );
});

test('a name prefix without case; the newest first without a query; deleted customers never show', async (t) => {
  const app = await buildTestApp(t);
  const grace = await createCustomer(app, { name: 'Grace Hopper' });
  app.clock.advance(1000);
  const gone = await createCustomer(app, { name: 'Grace Gone' });
  app.clock.advance(1000);
  const lower = await createCustomer(app, { name: 'grace lower' });
  assert.equal((await app.request('DELETE', `/api/customers/${gone.id}`)).status, 204);
  const byName = await searchCustomers(app.deps.db, { query: 'GRACE', field: 'name', cursor: undefined, limit: 10 });
  assert.deepEqual(
    byName.data.map((c) => c.id),
    [grace.id, lower.id],
  );
  const newest = await searchCustomers(app.deps.db, { query: '', field: 'email', cursor: undefined, limit: 1 });
  assert.equal(newest.data[0]!.name, 'grace lower');
  const second = await searchCustomers(app.deps.db, { query: '', field: 'email', cursor: newest.next, limit: 1 });
  assert.deepEqual(
    second.data.map((c) => c.id),
    [grace.id],
  );
  assert.equal(second.next, undefined);
});

test('odd queries and cursors are text: wildcards, quotes, the last code point, a forged cursor', async (t) => {
  const app = await buildTestApp(t);
  await createCustomer(app, { email: 'percent%x@a.example', name: "O'Brien_%" });
  for (const query of ['%', '_', "O'", '\u{10FFFF}', 'a'.repeat(254)]) {
    const page = await searchCustomers(app.deps.db, { query, field: 'name', cursor: 'not-a-cursor', limit: 5 });
    assert.ok(
      page.data.every((c) => (c.name ?? '').toLowerCase().startsWith(query.toLowerCase())),
      query,
    );
  }
  const percent = await searchCustomers(app.deps.db, {
    query: 'percent%',
    field: 'email',
    cursor: undefined,
    limit: 5,
  });
  assert.equal(percent.data.length, 1);
});

test(
  'each search reads an index, never the whole table',
  { skip: !ON_POSTGRES && 'EXPLAIN wording differs; PostgreSQL is the scale database' },
  async (t) => {
    const app = await buildTestApp(t);
    const { db } = app.deps;
    // Enough rows that the planner would rather not scan, and fresh statistics.
    await sql`insert into customers (id, email, email_normalized, name, name_normalized, metadata, created_at, updated_at, tax_rate_ids, tax_exempt, tax_ids)
    select 'cus_' || lpad(i::text, 26, '0'), 'u' || i || '@example.com', 'u' || i || '@example.com', 'Name ' || i, 'name ' || i, '{}',
      now(), now(), '[]', 'none', '[]'
    from generate_series(1, 20000) as i`.execute(db);
    await sql`analyze customers`.execute(db);
    const plans: string[] = [];
    for (const [field, query] of [
      ['email', 'u1234'],
      ['name', 'NAME 1234'],
      ['email', ''],
    ] as const) {
      const compiled = await captureSql(db, () => searchCustomers(db, { query, field, cursor: undefined, limit: 25 }));
      const explain = await sql
        .raw(`explain ${compiled.sql.replace(/\$(\d+)/g, (_m, n) => literal(compiled.parameters[Number(n) - 1]))}`)
        .execute(db);
      plans.push((explain.rows as { 'QUERY PLAN': string }[]).map((row) => row['QUERY PLAN']).join('\n'));
    }
    for (const plan of plans) {
      assert.match(plan, /Index/, plan);
      assert.doesNotMatch(plan, /Seq Scan on customers/, plan);
    }
  },
);

/** The first statement `run` compiles (the executor's compileQuery watched for the call). */
async function captureSql(db: Kysely<Database>, run: () => Promise<unknown>) {
  let captured: { sql: string; parameters: readonly unknown[] } | undefined;
  const original = db.getExecutor().compileQuery.bind(db.getExecutor());
  const executor = db.getExecutor() as unknown as { compileQuery: typeof original };
  executor.compileQuery = (node, queryId) => {
    const compiled = original(node, queryId);
    captured ??= { sql: compiled.sql, parameters: compiled.parameters };
    return compiled;
  };
  try {
    await run();
  } finally {
    executor.compileQuery = original;
  }
  return captured!;
}

/** A SQL literal of a test value (for EXPLAIN only, never the app's statements). */
function literal(value: unknown): string {
  if (typeof value === 'number') return String(value);
  return `'${String(value).replace(/'/g, "''")}'`;
}

test('a Unicode name prefix in any case and width finds the name; the page shows the name as written', async (t) => {
  const app = await buildTestApp(t);
  const elodie = await createCustomer(app, { name: 'Élodie Ｄｕｐｏｎｔ' });
  const renamed = await createCustomer(app, { name: 'Before' });
  assert.equal(
    (await app.request('PATCH', `/api/customers/${renamed.id}`, { body: { name: 'ÖZGÜR Şahin' } })).status,
    200,
  );
  const find = (query: string) =>
    searchCustomers(app.deps.db, { query, field: 'name', cursor: undefined, limit: 5 }).then((page) =>
      page.data.map((c) => c.id),
    );
  assert.deepEqual(await find('éLODIE dup'), [elodie.id]);
  assert.deepEqual(await find('E\u0301lodie'), [elodie.id], 'a decomposed É is the same letter');
  assert.deepEqual(await find('özgür ş'), [renamed.id], 'a renamed customer is found by its new name');
  assert.deepEqual(await find('before'), []);
  assert.equal(
    (await searchCustomers(app.deps.db, { query: 'élodie', field: 'name', cursor: undefined, limit: 5 })).data[0]!.name,
    'Élodie Ｄｕｐｏｎｔ',
  );
});
