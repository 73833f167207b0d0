// Draft invoices (SPEC §12 "Drafts"): a renewal with usage or prorations is stored `draft`
// until its `finalizes_at` (period start + INVOICE_FINALIZE_DELAY), and only then numbered —
// so `status` gains `draft`, `number` becomes nullable (a draft has none; a voided draft
// never takes one, so the sequence stays gap-free), and the worker finds due drafts through
// a partial index. PostgreSQL alters in place. SQLite cannot alter a CHECK or a NOT NULL, so
// the table is rebuilt (its documented procedure, as 0010 and 0018: new table, copy, drop,
// rename, indexes again) — but `invoices` is referenced (invoice_payment_attempts,
// customer_balance_transactions) and foreign keys are on, and the pragma that turns them off
// is a no-op inside the migration's transaction: the referencing rows are set aside in
// temporary tables while the old table is dropped, and put back once the new one stands
// under the old name (the references name `invoices`, so they now point at it). There are
// no triggers or views on `invoices`.
import { type Kysely, sql } from 'kysely';
import { columnTypes, isPostgres } from '../column-types.ts';

const STATUSES_BEFORE = ['open', 'paid', 'void', 'uncollectible'] as const;
const STATUSES_AFTER = ['draft', ...STATUSES_BEFORE] as const;

/** The tables whose foreign keys reference `invoices`. */
const REFERENCING = ['invoice_payment_attempts', 'customer_balance_transactions'] as const;

/** Every column of `invoices` before this migration, in its order. */
const COLUMNS_BEFORE = [
  'id',
  'number',
  'customer_id',
  'subscription_id',
  'status',
  'currency',
  'amount_due',
  'amount_paid',
  'period_start',
  'period_end',
  'due_at',
  'attempt_count',
  'next_payment_attempt_at',
  'lines',
  'hosted_token',
  'paid_at',
  'voided_at',
  'marked_uncollectible_at',
  'metadata',
  'created_at',
  'updated_at',
  'test_clock_id',
  'charges_stopped_at',
  'subtotal',
  'total_discount',
  'total_tax',
  'total',
  'applied_balance',
] as const;

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
async function createFinalizationIndex(db: Kysely<any>): Promise<void> {
  // The worker's claim of drafts due for finalization (finalize_invoices).
  await db.schema
    .createIndex('invoices_due_for_finalization')
    .on('invoices')
    .columns(['finalizes_at', 'id'])
    .where(sql<boolean>`status = 'draft'`)
    .execute();
}

/** SQLite: `invoices` rebuilt with `withDrafts`' definition (0013 … 0025's columns, and this one's when true). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
async function rebuildSqlite(db: Kysely<any>, withDrafts: boolean): Promise<void> {
  const t = columnTypes(db);
  const allowed = sql.join((withDrafts ? STATUSES_AFTER : STATUSES_BEFORE).map((status) => sql.lit(status)));
  let table = db.schema
    .createTable('invoices_rebuilt')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('number', 'text', (c) => (withDrafts ? c.unique() : c.notNull().unique()))
    .addColumn('customer_id', 'text', (c) => c.notNull().references('customers.id'))
    .addColumn('subscription_id', 'text', (c) => c.references('subscriptions.id'))
    .addColumn('status', 'text', (c) => c.notNull().check(sql`status in (${allowed})`))
    .addColumn('currency', 'text', (c) => c.notNull())
    .addColumn('amount_due', t.bigint, (c) => c.notNull().check(sql`amount_due >= 0`))
    .addColumn('amount_paid', t.bigint, (c) => c.notNull().check(sql`amount_paid >= 0 and amount_paid <= amount_due`))
    .addColumn('period_start', t.timestamp, (c) => c.notNull())
    .addColumn('period_end', t.timestamp, (c) => c.notNull())
    .addColumn('due_at', t.timestamp, (c) => c.notNull())
    .addColumn('attempt_count', 'integer', (c) =>
      c
        .notNull()
        .defaultTo(0)
        .check(sql`attempt_count >= 0`),
    )
    .addColumn('next_payment_attempt_at', t.timestamp)
    .addColumn('lines', 'text', (c) => c.notNull())
    .addColumn('hosted_token', 'text', (c) => c.notNull().unique())
    .addColumn('paid_at', t.timestamp)
    .addColumn('voided_at', t.timestamp)
    .addColumn('marked_uncollectible_at', t.timestamp)
    .addColumn('metadata', 'text', (c) => c.notNull())
    .addColumn('created_at', t.timestamp, (c) => c.notNull())
    .addColumn('updated_at', t.timestamp, (c) => c.notNull())
    .addColumn('test_clock_id', 'text')
    .addColumn('charges_stopped_at', t.timestamp)
    .addColumn('subtotal', t.bigint, (c) => c.notNull().defaultTo(0))
    .addColumn('total_discount', t.bigint, (c) =>
      c
        .notNull()
        .defaultTo(0)
        .check(sql`${sql.ref('total_discount')} >= 0`),
    )
    .addColumn('total_tax', t.bigint, (c) => c.notNull().defaultTo(0))
    .addColumn('total', t.bigint, (c) => c.notNull().defaultTo(0))
    .addColumn('applied_balance', t.bigint, (c) =>
      c
        .notNull()
        .defaultTo(0)
        .check(sql`${sql.ref('applied_balance')} >= 0`),
    );
  if (withDrafts) table = table.addColumn('finalizes_at', t.timestamp);
  await table.execute();
  // Down keeps only the old columns (finalizes_at goes with the old table).
  const columns = sql.join(COLUMNS_BEFORE.map((column) => sql.ref(column)));
  await sql`insert into invoices_rebuilt (${columns}) select ${columns} from invoices`.execute(db);
  for (const name of REFERENCING) {
    await sql`create temp table ${sql.ref(`${name}_aside`)} as select * from ${sql.ref(name)}`.execute(db);
    await sql`delete from ${sql.ref(name)}`.execute(db);
  }
  await db.schema.dropTable('invoices').execute();
  await db.schema.alterTable('invoices_rebuilt').renameTo('invoices').execute();
  for (const name of REFERENCING) {
    await sql`insert into ${sql.ref(name)} select * from ${sql.ref(`${name}_aside`)}`.execute(db);
    await sql`drop table ${sql.ref(`${name}_aside`)}`.execute(db);
  }
  // Every index 0013, 0016 and 0017 made, as they made it.
  await db.schema
    .createIndex('invoices_one_per_subscription_period')
    .on('invoices')
    .columns(['subscription_id', 'period_start'])
    .unique()
    .execute();
  for (const field of ['created_at', 'due_at', 'amount_due']) {
    await db.schema.createIndex(`invoices_by_${field}`).on('invoices').columns([field, 'id']).execute();
  }
  await db.schema
    .createIndex('invoices_by_customer')
    .on('invoices')
    .columns(['customer_id', 'created_at', 'id'])
    .execute();
  await db.schema
    .createIndex('invoices_by_subscription_status')
    .on('invoices')
    .columns(['subscription_id', 'status', 'created_at'])
    .execute();
  await db.schema.createIndex('invoices_by_status_due_at').on('invoices').columns(['status', 'due_at', 'id']).execute();
  await db.schema
    .createIndex('invoices_by_test_clock')
    .on('invoices')
    .columns(['test_clock_id'])
    .where(sql.ref('test_clock_id'), 'is not', null)
    .execute();
  await db.schema
    .createIndex('invoices_due_for_charge')
    .on('invoices')
    .columns(['next_payment_attempt_at', 'id'])
    .where(sql<boolean>`status = 'open' and next_payment_attempt_at is not null`)
    .execute();
  if (withDrafts) await createFinalizationIndex(db);
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function up(db: Kysely<any>): Promise<void> {
  if (!isPostgres(db)) {
    await rebuildSqlite(db, true);
    return;
  }
  const allowed = sql.join(STATUSES_AFTER.map((status) => sql.lit(status)));
  // The name PostgreSQL gave the column's check in 0013.
  await sql`alter table invoices drop constraint invoices_status_check`.execute(db);
  await sql`alter table invoices add constraint invoices_status_check check (status in (${allowed}))`.execute(db);
  await sql`alter table invoices alter column number drop not null`.execute(db);
  await db.schema.alterTable('invoices').addColumn('finalizes_at', columnTypes(db).timestamp).execute();
  await createFinalizationIndex(db);
}

/** Fails (changing nothing on PostgreSQL) while any invoice is a draft or has no number. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function down(db: Kysely<any>): Promise<void> {
  if (!isPostgres(db)) {
    await rebuildSqlite(db, false);
    return;
  }
  const allowed = sql.join(STATUSES_BEFORE.map((status) => sql.lit(status)));
  await sql`alter table invoices drop constraint invoices_status_check`.execute(db);
  await sql`alter table invoices add constraint invoices_status_check check (status in (${allowed}))`.execute(db);
  await sql`alter table invoices alter column number set not null`.execute(db);
  await db.schema.dropIndex('invoices_due_for_finalization').execute();
  await db.schema.alterTable('invoices').dropColumn('finalizes_at').execute();
}
