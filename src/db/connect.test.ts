import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { test } from 'node:test';
import { sql } from 'kysely';
import { createTestDatabase, ON_POSTGRES, TEST_DATABASE_URL } from '../../test/helpers/database.ts';
import { openDatabase, SQLITE_WAL_AUTOCHECKPOINT_PAGES } from './connect.ts';
import { MIGRATION_NAMES, migrateToLatest } from './migrate.ts';

test('SQLite files open with WAL (checkpointed every SQLITE_WAL_AUTOCHECKPOINT_PAGES), synchronous=FULL, foreign keys and a busy timeout', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'billing-db-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const handle = openDatabase({ kind: 'sqlite', path: join(dir, 'nested', 'billing.db') });
  t.after(() => handle.close());
  const pragma = async (name: string) =>
    Object.values((await sql.raw(`pragma ${name}`).execute(handle.db)).rows[0] as object)[0];
  assert.equal(await pragma('journal_mode'), 'wal');
  assert.equal(await pragma('synchronous'), 2); // FULL
  assert.equal(await pragma('foreign_keys'), 1);
  assert.equal(await pragma('busy_timeout'), 5000);
  assert.equal(await pragma('wal_autocheckpoint'), SQLITE_WAL_AUTOCHECKPOINT_PAGES);
});

test('opening a fresh SQLite file while another connection holds its write lock waits for it, not SQLITE_BUSY at once', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'billing-db-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'billing.db');
  // A thread creates the file in rollback mode and holds its write lock for 300 ms, as a
  // second process migrating the same fresh file would. Opening is synchronous, so the lock
  // must be held by another thread for this one to wait on it.
  const signal = new Int32Array(new SharedArrayBuffer(4));
  const holder = new Worker(
    `const { DatabaseSync } = require('node:sqlite');
     const { workerData } = require('node:worker_threads');
     const database = new DatabaseSync(workerData.path);
     database.exec('begin immediate');
     database.exec('create table held (id integer)');
     Atomics.store(workerData.signal, 0, 1);
     Atomics.notify(workerData.signal, 0);
     Atomics.wait(workerData.signal, 0, 1, 300);
     database.exec('commit');
     database.close();`,
    { eval: true, workerData: { path, signal } },
  );
  const exited = new Promise((resolve) => holder.on('exit', resolve));
  Atomics.wait(signal, 0, 0, 5000);
  assert.equal(Atomics.load(signal, 0), 1, 'the holder took the lock');
  const started = performance.now();
  const handle = openDatabase({ kind: 'sqlite', path });
  t.after(() => handle.close());
  assert.ok(performance.now() - started >= 200, 'waited for the holder to commit');
  await exited;
  const mode = await sql.raw('pragma journal_mode').execute(handle.db);
  assert.deepEqual(mode.rows, [{ journal_mode: 'wal' }]);
  const tables = await sql.raw(`select name from sqlite_master where name = 'held'`).execute(handle.db);
  assert.equal(tables.rows.length, 1, "the holder's table was committed first");
});

test('migrations apply once; a second run applies nothing', async (t) => {
  const database = await createTestDatabase();
  t.after(() => database.drop());
  const config = ON_POSTGRES
    ? ({ kind: 'postgres', url: TEST_DATABASE_URL } as const)
    : ({ kind: 'sqlite', path: ':memory:' } as const);
  const handle = openDatabase(config, { schema: database.schema });
  t.after(() => handle.close());
  const applied = await migrateToLatest(handle);
  assert.deepEqual(applied, [...MIGRATION_NAMES]);
  assert.deepEqual(applied.slice(0, 2), ['0001_foundation', '0002_plans_subscriptions']);
  assert.deepEqual(await migrateToLatest(handle), []);
});

test(
  'instances migrating at once on PostgreSQL apply each migration exactly once',
  {
    skip: !ON_POSTGRES && 'PostgreSQL only: SQLite has one process per file here',
  },
  async (t) => {
    const database = await createTestDatabase();
    t.after(() => database.drop());
    const handles = [1, 2, 3].map(() =>
      openDatabase({ kind: 'postgres', url: TEST_DATABASE_URL }, { schema: database.schema }),
    );
    t.after(() => Promise.all(handles.map((h) => h.close())));
    const applied = await Promise.all(handles.map((h) => migrateToLatest(h)));
    assert.deepEqual(applied.flat().sort(), [...MIGRATION_NAMES]);
  },
);

test('processes migrating one fresh SQLite file at once apply each migration exactly once', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'billing-race-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const runs = await Promise.all(
    [1, 2, 3].map(
      () =>
        new Promise<{ code: number | null; out: string }>((resolve) => {
          const child = spawn(process.execPath, ['src/cli.ts', 'migrate'], {
            env: { ...process.env, DATABASE_URL: `sqlite:${join(dir, 'billing.db')}` },
          });
          let out = '';
          child.stdout.on('data', (chunk) => {
            out += chunk;
          });
          child.stderr.on('data', (chunk) => {
            out += chunk;
          });
          child.on('close', (code) => resolve({ code, out }));
        }),
    ),
  );
  assert.deepEqual(
    runs.map((r) => r.code),
    [0, 0, 0],
    runs.map((r) => r.out).join('\n'),
  );
  assert.equal(runs.filter((r) => r.out.startsWith('applied 0001_foundation')).length, 1);
  assert.equal(runs.filter((r) => r.out.includes('database is up to date')).length, 2);
});

test(
  'PostgreSQL introspection (the Migrator) sees only its own schema, even while others are dropped',
  {
    skip: !ON_POSTGRES && 'PostgreSQL only: schemas',
  },
  async (t) => {
    const own = await createTestDatabase();
    const other = await createTestDatabase();
    t.after(() => Promise.all([own.drop(), other.drop()]));
    const handle = openDatabase({ kind: 'postgres', url: TEST_DATABASE_URL }, { schema: own.schema });
    const otherHandle = openDatabase({ kind: 'postgres', url: TEST_DATABASE_URL }, { schema: other.schema });
    t.after(() => Promise.all([handle.close(), otherHandle.close()]));
    await sql.raw(`create table ${other.schema}.stranger (id int)`).execute(otherHandle.db);
    await migrateToLatest(handle);
    const tables = await handle.db.introspection.getTables();
    assert.ok(tables.every((table) => table.schema === own.schema));
    assert.ok(tables.some((table) => table.name === 'customers'));
    assert.ok(!tables.some((table) => table.name === 'stranger'));
    assert.ok(!tables.some((table) => table.name === 'kysely_migration'), 'Kysely tables hidden by default');
    const customers = tables.find((table) => table.name === 'customers');
    assert.ok(customers?.columns.some((column) => column.name === 'email' && column.dataType === 'text'));
    // Schemas created and dropped while migrating another never break its table lookup.
    const churn = (async () => {
      for (let i = 0; i < 20; i++) {
        const temporary = await createTestDatabase();
        await sql.raw(`create table ${temporary.schema}.t (id serial primary key)`).execute(otherHandle.db);
        await temporary.drop();
      }
    })();
    for (let i = 0; i < 20; i++) assert.deepEqual(await migrateToLatest(handle), []);
    await churn;
  },
);
