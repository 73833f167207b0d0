// A worker batch's row that fails (SPEC §7 "Failing rows"): its own work is rolled back alone,
// the rest of the batch commits, and the failure is recorded here so the row is retried after
// a backoff instead of being claimed — and failing the batch again — every tick. One row per
// (job, claimed row); deleted when the row goes through. `test_clock_id` is the row's scope
// (SPEC §11), so a clock's advance steps to a retry of its own rows only.
import type { Kysely } from 'kysely';
import { columnTypes } from '../column-types.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function up(db: Kysely<any>): Promise<void> {
  const t = columnTypes(db);
  await db.schema
    .createTable('worker_row_failures')
    .addColumn('job', 'text', (c) => c.notNull())
    .addColumn('row_id', 'text', (c) => c.notNull())
    .addColumn('test_clock_id', 'text')
    .addColumn('attempts', 'integer', (c) => c.notNull())
    .addColumn('error', 'text', (c) => c.notNull())
    .addColumn('first_failed_at', t.timestamp, (c) => c.notNull())
    .addColumn('failed_at', t.timestamp, (c) => c.notNull())
    .addColumn('retry_at', t.timestamp, (c) => c.notNull())
    .addPrimaryKeyConstraint('worker_row_failures_pkey', ['job', 'row_id'])
    .execute();
  // A clock's advance asks for its next retry of a job (nextRetryAt), real time by IS NULL.
  await db.schema
    .createIndex('worker_row_failures_by_retry')
    .on('worker_row_failures')
    .columns(['job', 'test_clock_id', 'retry_at'])
    .execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('worker_row_failures').execute();
}
