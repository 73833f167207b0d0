// A worker batch's row that fails (SPEC §7 "Failing rows"): its own work is rolled back alone,
// the rest of the batch commits, and the failure is recorded here so the row is retried after
// a backoff instead of being claimed — and failing the batch again — every tick. One row per
// (job, claimed row); deleted when the row goes through. `test_clock_id` is the row's scope
// (SPEC §11), so a clock's advance steps to a retry of its own rows only.
//
// And the due-work indexes 0028 left out, led by the scope as its are, so these claims too
// read only due rows of their own scope (a real-time claim no clock row): open dunning cases
// by `next_action_at`, incomplete subscriptions by `created_at`. (Drafts keep 0026's
// `invoices_due_for_finalization`: they are short-lived and few.)
// `status` is a column as well as the predicate: with two equality terms SQLite prefers them
// over the older status-led indexes, which hold both scopes. The claims name the predicates
// with literals (SQLite uses a partial index only then).
import { type Kysely, sql } from 'kysely';
import { columnTypes } from '../column-types.ts';

/** The scope-led due indexes: name, table, columns, predicate. */
const DUE_INDEXES: readonly [string, string, string[], string][] = [
  ['dunning_cases_due', 'dunning_cases', ['test_clock_id', 'status', 'next_action_at', 'id'], `status = 'open'`],
  [
    'subscriptions_incomplete_due',
    'subscriptions',
    ['test_clock_id', 'status', 'created_at', 'id'],
    `status = 'incomplete'`,
  ],
];

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
  for (const [name, table, columns, where] of DUE_INDEXES) {
    await db.schema.createIndex(name).on(table).columns(columns).where(sql.raw<boolean>(where)).execute();
  }
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function down(db: Kysely<any>): Promise<void> {
  for (const [name] of DUE_INDEXES) await db.schema.dropIndex(name).execute();
  await db.schema.dropTable('worker_row_failures').execute();
}
