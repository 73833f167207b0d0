// The node:sqlite adapter's rows: plain objects with every column by name, also when another
// connection (another process's migration) rebuilds the table under a prepared `select *`
// with its columns in another order — values never land under another column's name. SQLite
// only: the adapter is SQLite's (PostgreSQL rows come from its own driver).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { DatabaseSync } from 'node:sqlite';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { adaptNodeSqlite } from './sqlite-adapter.ts';

function files(t: { after: (fn: () => void) => void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'sqlite-adapter-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return join(dir, 'db.sqlite');
}

test('rows are plain objects of every column, by name (a repeated name keeps its last value)', (t) => {
  const database = new DatabaseSync(files(t));
  t.after(() => database.close());
  database.exec(`create table t (id text primary key, amount integer, note text)`);
  database.exec(`insert into t values ('a', 5, null), ('b', 7, 'x')`);
  const adapted = adaptNodeSqlite(database);
  const rows = adapted.prepare('select * from t order by id').all([]);
  assert.deepEqual(rows, [
    { id: 'a', amount: 5, note: null },
    { id: 'b', amount: 7, note: 'x' },
  ]);
  assert.equal(Object.getPrototypeOf(rows[0]), Object.prototype);
  assert.deepEqual(adapted.prepare(`select id, amount as id from t where id = ?`).all(['b']), [{ id: 7 }]);
  assert.deepEqual([...adapted.prepare('select id from t order by id').iterate([])], [{ id: 'a' }, { id: 'b' }]);
  assert.deepEqual(adapted.readNow('select amount from t where id = ?', ['a']), [{ amount: 5 }]);
  // A statement without columns runs as before; a column named __proto__ keeps node:sqlite's objects.
  assert.equal(adapted.prepare(`update t set amount = amount + 1 where id = ?`).run(['a']).changes, 1);
  const proto = adapted.prepare(`select amount as __proto__ from t where id = 'a'`).all([]) as Record<
    string,
    unknown
  >[];
  assert.equal(Object.getOwnPropertyDescriptor(proto[0], '__proto__')?.value, 6);
});

test('a table rebuilt by another connection under a prepared select *: every value stays under its own column', (t) => {
  const path = files(t);
  const app = new DatabaseSync(path);
  const migrator = new DatabaseSync(path);
  t.after(() => {
    app.close();
    migrator.close();
  });
  app.exec(`pragma journal_mode = wal`);
  app.exec(`create table invoices (id text primary key, amount_due integer, amount_paid integer)`);
  app.exec(`insert into invoices values ('inv_1', 5000, 0)`);
  const adapted = adaptNodeSqlite(app);
  const select = adapted.prepare('select * from invoices');
  const readNow = () => adapted.readNow('select * from invoices', []);
  assert.deepEqual(select.all([]), [{ id: 'inv_1', amount_due: 5000, amount_paid: 0 }]);
  assert.deepEqual(readNow(), [{ id: 'inv_1', amount_due: 5000, amount_paid: 0 }]);

  // Another process's migration: the same columns in another order, and one more.
  migrator.exec(`begin;
    create table invoices_new (amount_paid integer, id text primary key, currency text, amount_due integer);
    insert into invoices_new (amount_paid, id, currency, amount_due) select amount_paid, id, 'NGN', amount_due from invoices;
    drop table invoices;
    alter table invoices_new rename to invoices;
    commit;`);
  const expected = { amount_paid: 0, id: 'inv_1', currency: 'NGN', amount_due: 5000 };
  assert.deepEqual(select.all([]), [expected]);
  assert.deepEqual(readNow(), [expected]);
  assert.deepEqual([...select.iterate([])], [expected]);

  // A write returning rows, prepared before the next rebuild, reads the columns it ran with.
  const insert = adapted.prepare(`insert into invoices (id, amount_due, amount_paid) values (?, ?, ?) returning *`);
  migrator.exec(`alter table invoices add column memo text`);
  assert.deepEqual(insert.all(['inv_2', 700, 100]), [
    { amount_paid: 100, id: 'inv_2', currency: null, amount_due: 700, memo: null },
  ]);
});
