// Test clocks (SPEC §11): a clock per test scenario, and the customers attached to it. The
// rows the worker claims (subscriptions, invoices, dunning cases) carry their customer's
// clock, so the real-time jobs filter `test_clock_id IS NULL` and an advance filters one
// clock, each without a join. The partial indexes hold only clock rows: real-time scans keep
// their own indexes, and an advance or a DELETE of a clock finds its rows directly.
import { type Kysely, sql } from 'kysely';
import { columnTypes } from '../column-types.ts';

const SCOPED_TABLES = ['customers', 'subscriptions', 'invoices', 'dunning_cases'] as const;

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function up(db: Kysely<any>): Promise<void> {
  const t = columnTypes(db);
  await db.schema
    .createTable('test_clocks')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text')
    // What the API shows: the target of the advance in progress, else the clock's time.
    .addColumn('frozen_time', t.timestamp, (c) => c.notNull())
    // The time the clock's objects have reached (= frozen_time when ready); an advance
    // resumes from here after a crash.
    .addColumn('reached_time', t.timestamp, (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull().check(sql`status in ('ready', 'advancing')`))
    // The worker running the advance: its token and lease (another takes over when it lapses).
    .addColumn('lease_token', 'text')
    .addColumn('lease_expires_at', t.timestamp)
    .addColumn('created_at', t.timestamp, (c) => c.notNull())
    .addColumn('updated_at', t.timestamp, (c) => c.notNull())
    .execute();
  await db.schema.createIndex('test_clocks_by_created_at').on('test_clocks').columns(['created_at', 'id']).execute();
  await db.schema
    .createIndex('test_clocks_advancing')
    .on('test_clocks')
    .columns(['status', 'lease_expires_at'])
    .execute();
  for (const table of SCOPED_TABLES) {
    await db.schema.alterTable(table).addColumn('test_clock_id', 'text').execute();
    await db.schema
      .createIndex(`${table}_by_test_clock`)
      .on(table)
      .columns(['test_clock_id'])
      .where(sql.ref('test_clock_id'), 'is not', null)
      .execute();
  }
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function down(db: Kysely<any>): Promise<void> {
  for (const table of SCOPED_TABLES) {
    await db.schema.dropIndex(`${table}_by_test_clock`).execute();
    await db.schema.alterTable(table).dropColumn('test_clock_id').execute();
  }
  await db.schema.dropTable('test_clocks').execute();
}
