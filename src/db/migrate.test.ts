import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type Kysely, sql } from 'kysely';
import type { Migration } from 'kysely/migration';
import { createTestDatabase, ON_POSTGRES, TEST_DATABASE_URL } from '../../test/helpers/database.ts';
import { openDatabase } from './connect.ts';
import { APP_MIGRATIONS, MIGRATION_NAMES, migrateToLatest } from './migrate.ts';

/** A migration that creates table `name` (and drops it on the way down). */
function tableMigration(name: string): Migration {
  return {
    up: async (db: Kysely<any>) => {
      await db.schema
        .createTable(name)
        .addColumn('id', 'text', (c) => c.primaryKey())
        .execute();
    },
    down: async (db: Kysely<any>) => {
      await db.schema.dropTable(name).execute();
    },
  };
}

test('a migration numbered before one already applied (branches merged in any order) still applies', async (t) => {
  const database = await createTestDatabase();
  t.after(() => database.drop());
  const config = ON_POSTGRES
    ? ({ kind: 'postgres', url: TEST_DATABASE_URL } as const)
    : ({ kind: 'sqlite', path: ':memory:' } as const);
  const handle = openDatabase(config, { schema: database.schema });
  t.after(() => handle.close());

  // The app's migrations plus a later-numbered one, merged first…
  const later = { ...APP_MIGRATIONS, '9001_later_branch': tableMigration('later_branch') };
  assert.deepEqual(await migrateToLatest(handle, later), [...MIGRATION_NAMES, '9001_later_branch']);
  // …then an earlier-numbered one from another branch, merged after it.
  const both = { ...later, '9000_earlier_branch': tableMigration('earlier_branch') };
  assert.deepEqual(await migrateToLatest(handle, both), ['9000_earlier_branch']);
  assert.deepEqual(await migrateToLatest(handle, both), [], 'nothing left to apply');
  for (const table of ['later_branch', 'earlier_branch']) {
    await sql`insert into ${sql.table(table)} (id) values (${'x'})`.execute(handle.db);
  }
  const { rows } = await sql<{ name: string }>`select name from kysely_migration order by timestamp, name`.execute(
    handle.db,
  );
  assert.deepEqual(rows.map((r) => r.name).slice(-2), ['9001_later_branch', '9000_earlier_branch']);
});
