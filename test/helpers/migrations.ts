// Set-up of a migration's own test: a fresh database of the pass's kind, migrated to just
// before the migration under test, with a customer row the rows under test can belong to.
import type { TestContext } from 'node:test';
import type { Kysely } from 'kysely';
import { openDatabase } from '../../src/db/connect.ts';
import type { DatabaseHandle } from '../../src/db/connect.ts';
import { APP_MIGRATIONS, migrateToLatest } from '../../src/db/migrate.ts';
import { createTestDatabase, ON_POSTGRES, TEST_DATABASE_URL } from './database.ts';

/** The customer every migration test's rows belong to. */
export const MIGRATION_CUSTOMER = 'cus_01JD3Q7Z8X9Y0A1B2C3D4E5F6G';

/**
 * A database (SQLite in memory, or a PostgreSQL schema of its own) with every migration but
 * `migration` applied, and a customer `MIGRATION_CUSTOMER` created at `createdAt` (ISO 8601).
 * `earlierOnly`: only the migrations named before `migration`, a database as it stood when
 * `migration` was written (migrateToLatest then applies it and every later one, in order).
 * `db` is untyped: the tables are as they were before the migration. Closed after the test.
 */
export async function databaseBefore(
  t: TestContext,
  migration: string,
  createdAt: string,
  options: { earlierOnly?: boolean } = {},
): Promise<{ handle: DatabaseHandle; db: Kysely<any> }> {
  const database = await createTestDatabase();
  t.after(() => database.drop());
  const config = ON_POSTGRES
    ? ({ kind: 'postgres', url: TEST_DATABASE_URL } as const)
    : ({ kind: 'sqlite', path: ':memory:' } as const);
  const handle = openDatabase(config, { schema: database.schema });
  t.after(() => handle.close());
  const db = handle.db as unknown as Kysely<any>;
  const { [migration]: _underTest, ...others } = APP_MIGRATIONS;
  const before = options.earlierOnly
    ? Object.fromEntries(Object.entries(others).filter(([name]) => name < migration))
    : others;
  await migrateToLatest(handle, before);
  await db
    .insertInto('customers')
    .values({
      id: MIGRATION_CUSTOMER,
      email: 'ada@example.com',
      email_normalized: 'ada@example.com',
      metadata: '{}',
      created_at: createdAt,
      updated_at: createdAt,
    })
    .execute();
  return { handle, db };
}

/**
 * Writes a monthly plan `id` (NGN 50.00, `Pro`, active) created at `createdAt` (ISO 8601),
 * with the plan columns every migration test's schema has (later columns keep their defaults).
 */
export async function insertMigrationPlan(db: Kysely<any>, id: string, createdAt: string): Promise<void> {
  await db
    .insertInto('plans')
    .values({
      id,
      name: 'Pro',
      amount: 5000,
      currency: 'NGN',
      interval: 'month',
      interval_count: 1,
      active: ON_POSTGRES ? true : 1,
      created_at: createdAt,
      updated_at: createdAt,
    })
    .execute();
}
