// Test databases: SQLite in memory, or — when TEST_DATABASE_URL names PostgreSQL — a fresh
// schema per test on that server, dropped afterwards. Each test owns its data.
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { globSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { openDatabase } from '../../src/db/connect.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';

export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL ?? '';
export const ON_POSTGRES = /^postgres(ql)?:\/\//.test(TEST_DATABASE_URL);

export interface TestDatabase {
  /** DATABASE_URL to give the app. */
  url: string;
  /** PostgreSQL schema (undefined on SQLite). */
  schema: string | undefined;
  drop(): Promise<void>;
}

/** Runs `text` (one statement or several) on its own connection to TEST_DATABASE_URL. */
async function adminQuery(text: string): Promise<void> {
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}

let sqliteTemplate: Promise<Uint8Array> | undefined;

/**
 * Every migration applied once per test process to an in-memory SQLite database, serialized:
 * give it as createDeps's `sqliteImage` and the app starts from its own copy, already
 * migrated. Migrating a fresh database costs more than most tests; a copy, well under a ms.
 */
export function migratedSqliteImage(): Promise<Uint8Array> {
  sqliteTemplate ??= (async () => {
    const handle = openDatabase({ kind: 'sqlite', path: ':memory:' });
    try {
      await migrateToLatest(handle);
      return handle.serialize!();
    } finally {
      await handle.close();
    }
  })();
  return sqliteTemplate;
}

/**
 * A fresh, empty database for one test. On SQLite, `file` (a path) gives a file database
 * that several processes can open; otherwise it is in memory.
 */
export async function createTestDatabase(file?: string): Promise<TestDatabase> {
  if (!ON_POSTGRES) {
    return { url: `sqlite:${file ?? ':memory:'}`, schema: undefined, drop: async () => {} };
  }
  const schema = `t_${randomBytes(6).toString('hex')}`;
  await adminQuery(`create schema ${schema}`);
  return {
    url: TEST_DATABASE_URL,
    schema,
    drop: () => adminQuery(`drop schema if exists ${schema} cascade`),
  };
}

let postgresTemplate: Promise<{ name: string; sql: string } | null> | undefined;

/**
 * Every migration applied to a PostgreSQL schema, as SQL that rebuilds it (`pg_dump
 * --inserts`: tables, constraints, indexes, sequences and the migration bookkeeping rows),
 * the schema then dropped. Migrating takes seconds on PostgreSQL (the Migrator's advisory
 * lock is one for the whole database, so parallel tests queue on it); replaying the dump is
 * one round trip. Null when pg_dump cannot be run (not installed, or older than the server):
 * tests then migrate their own schema.
 */
async function dumpMigratedSchema(): Promise<{ name: string; sql: string } | null> {
  const name = `t_template_${randomBytes(8).toString('hex')}`;
  await adminQuery(`create schema ${name}`);
  try {
    const handle = openDatabase({ kind: 'postgres', url: TEST_DATABASE_URL }, { schema: name, poolSize: 1 });
    try {
      await migrateToLatest(handle);
    } finally {
      await handle.close();
    }
    const dump = (args: string[]) =>
      promisify(execFile)('pg_dump', [...args, `--schema=${name}`, TEST_DATABASE_URL], { maxBuffer: 16 * 1024 * 1024 });
    const ddl = await dump(['--schema-only', '--no-owner', '--no-privileges']);
    const rows = await dump(['--data-only', '--inserts']);
    // psql meta-commands (\restrict …) are not SQL; the rest is, schema-qualified by `name`.
    const sql = `${ddl.stdout}\n${rows.stdout}`
      .split('\n')
      .filter((line) => !line.startsWith('\\'))
      .join('\n');
    return { name, sql };
  } catch {
    return null;
  } finally {
    await adminQuery(`drop schema if exists ${name} cascade`);
  }
}

/**
 * dumpMigratedSchema once per suite run rather than once per test file: kept in the temp dir
 * under a hash of the migrations and the server's URL, so a changed migration makes a new one.
 */
function migratedPostgresTemplate(): Promise<{ name: string; sql: string } | null> {
  postgresTemplate ??= (async () => {
    const hash = createHash('sha256').update(TEST_DATABASE_URL);
    const dbDir = new URL('../../src/db/', import.meta.url);
    for (const file of globSync('{migrate.ts,migrations/*.ts}', { cwd: dbDir }).sort()) {
      hash.update(file).update(readFileSync(new URL(file, dbDir)));
    }
    const file = join(tmpdir(), `billing-test-pg-template-${hash.digest('hex').slice(0, 16)}.json`);
    try {
      return JSON.parse(readFileSync(file, 'utf8')) as { name: string; sql: string };
    } catch {
      // not made yet (or half-written by a process that died): make it
    }
    const template = await dumpMigratedSchema();
    if (template) {
      // Written whole, then renamed: a process reading meanwhile never sees half of it.
      const partial = `${file}.${process.pid}`;
      writeFileSync(partial, JSON.stringify(template));
      renameSync(partial, file);
    }
    return template;
  })();
  return postgresTemplate;
}

export interface MigratedTestDatabase extends TestDatabase {
  /** SQLite: the migrated image to give createDeps (each app gets its own copy). */
  sqliteImage: Uint8Array | undefined;
  /**
   * True when the database is migrated already (createDeps may skip `migrateToLatest`, whose
   * check alone takes seconds on a busy PostgreSQL: it queues on the database-wide lock).
   */
  migrated: boolean;
}

/**
 * A fresh database for one test with every migration applied: on SQLite in memory, give
 * `sqliteImage` to createDeps; on PostgreSQL, a new schema rebuilt from a template migrated
 * once per process (see migratedPostgresTemplate), dropped by `drop()` — or an empty schema
 * when there is no template (`migrated` false: createDeps migrates it).
 */
export async function createMigratedTestDatabase(): Promise<MigratedTestDatabase> {
  if (!ON_POSTGRES) {
    return { ...(await createTestDatabase()), sqliteImage: await migratedSqliteImage(), migrated: true };
  }
  const template = await migratedPostgresTemplate();
  if (!template) return { ...(await createTestDatabase()), sqliteImage: undefined, migrated: false };
  const schema = `t_${randomBytes(6).toString('hex')}`;
  await adminQuery(template.sql.replaceAll(template.name, schema));
  return {
    url: TEST_DATABASE_URL,
    schema,
    sqliteImage: undefined,
    migrated: true,
    drop: () => adminQuery(`drop schema if exists ${schema} cascade`),
  };
}
