// Due-work indexes led by the scope (SPEC §7, §11): each claim of the worker reads a partial
// index of the rows it may take, keyed by `test_clock_id` first and then the due time, so a
// real-time claim reads only the index's NULL prefix (no clock row) and a clock's claim only
// that clock's prefix, each in due order: a claim touches only due rows of its own scope and
// costs the same with a million rows as with a thousand. For the renewal and period-end claims
// (active/trialing subscriptions by `current_period_end`), the charge claim (open invoices by
// `next_payment_attempt_at`) and the past-due claim (open invoices by `due_at`). They replace
// 0017's charge index and 0002's (status, current_period_end), which held both scopes mixed:
// a real-time claim walked every due clock row and dropped it. The claims name the indexes'
// predicates with literals (SQLite uses a partial index only then).
import { type Kysely, sql } from 'kysely';

/** The partial indexes: name, table, columns, predicate. */
const INDEXES: readonly [string, string, string[], string][] = [
  [
    'subscriptions_renewal_due',
    'subscriptions',
    ['test_clock_id', 'current_period_end', 'id'],
    `status in ('active', 'trialing')`,
  ],
  [
    'invoices_charge_due',
    'invoices',
    ['test_clock_id', 'next_payment_attempt_at', 'id'],
    `status = 'open' and next_payment_attempt_at is not null`,
  ],
  // `status` as a column too, though the predicate fixes it: with two equality terms SQLite
  // prefers this index over 0013's (status, due_at, id), which holds both scopes.
  ['invoices_open_by_due_at', 'invoices', ['test_clock_id', 'status', 'due_at', 'id'], `status = 'open'`],
];

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function up(db: Kysely<any>): Promise<void> {
  for (const [name, table, columns, where] of INDEXES) {
    await db.schema.createIndex(name).on(table).columns(columns).where(sql.raw<boolean>(where)).execute();
  }
  await db.schema.dropIndex('invoices_due_for_charge').execute();
  await db.schema.dropIndex('subscriptions_due_by_period_end').execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema
    .createIndex('subscriptions_due_by_period_end')
    .on('subscriptions')
    .columns(['status', 'current_period_end'])
    .execute();
  await db.schema
    .createIndex('invoices_due_for_charge')
    .on('invoices')
    .columns(['next_payment_attempt_at', 'id'])
    .where(sql<boolean>`status = 'open' and next_payment_attempt_at is not null`)
    .execute();
  for (const [name] of INDEXES) await db.schema.dropIndex(name).execute();
}
