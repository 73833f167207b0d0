// Test databases: SQLite in memory, or — when TEST_DATABASE_URL names PostgreSQL — a fresh
// schema per test on that server, dropped afterwards. Each test owns its data.
import { randomBytes } from 'node:crypto';
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
