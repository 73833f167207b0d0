// Invoices (SPEC §9): one per (subscription, billing period), final when issued, settled by
// payments. Numbers come from `invoice_numbers`, one counter row per INVOICE_PREFIX, moved in
// the issuing transaction: its row lock (PostgreSQL) or the single writer (SQLite) makes the
// sequence gap-free across instances, and a rollback gives the number back. Lines are stored
// as a JSON array on the invoice: an invoice is final when issued, so its lines never change.
// Payments and dunning cases gain the invoice they settled / chase.
import { type Kysely, sql } from 'kysely';
import { columnTypes } from '../column-types.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function up(db: Kysely<any>): Promise<void> {
  const t = columnTypes(db);

  await db.schema
    .createTable('invoice_numbers')
    .addColumn('prefix', 'text', (c) => c.primaryKey())
    .addColumn('last_number', t.bigint, (c) => c.notNull().check(sql`last_number >= 1`))
    .execute();

  await db.schema
    .createTable('invoices')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('number', 'text', (c) => c.notNull().unique())
    .addColumn('customer_id', 'text', (c) => c.notNull().references('customers.id'))
    .addColumn('subscription_id', 'text', (c) => c.references('subscriptions.id'))
    .addColumn('status', 'text', (c) => c.notNull().check(sql`status in ('open', 'paid', 'void', 'uncollectible')`))
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
    .execute();
  // SPEC §9: exactly one invoice per (subscription, period), whatever the workers do.
  await db.schema
    .createIndex('invoices_one_per_subscription_period')
    .on('invoices')
    .columns(['subscription_id', 'period_start'])
    .unique()
    .execute();
  // The lists' sorts, and their filters by customer, subscription and status.
  for (const field of ['created_at', 'due_at', 'amount_due']) {
    await db.schema.createIndex(`invoices_by_${field}`).on('invoices').columns([field, 'id']).execute();
  }
  await db.schema
    .createIndex('invoices_by_customer')
    .on('invoices')
    .columns(['customer_id', 'created_at', 'id'])
    .execute();
  // Settlement ("the subscription's oldest open invoice") and the subscription filter.
  await db.schema
    .createIndex('invoices_by_subscription_status')
    .on('invoices')
    .columns(['subscription_id', 'status', 'created_at'])
    .execute();
  // The worker's scan for open invoices past their due time.
  await db.schema.createIndex('invoices_by_status_due_at').on('invoices').columns(['status', 'due_at', 'id']).execute();

  await db.schema.alterTable('payments').addColumn('invoice_id', 'text').execute();
  await db.schema.createIndex('payments_by_invoice').on('payments').columns(['invoice_id']).execute();
  await db.schema.alterTable('dunning_cases').addColumn('invoice_id', 'text').execute();
  await db.schema.createIndex('dunning_cases_by_invoice').on('dunning_cases').columns(['invoice_id']).execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('dunning_cases_by_invoice').execute();
  await db.schema.alterTable('dunning_cases').dropColumn('invoice_id').execute();
  await db.schema.dropIndex('payments_by_invoice').execute();
  await db.schema.alterTable('payments').dropColumn('invoice_id').execute();
  await db.schema.dropTable('invoices').execute();
  await db.schema.dropTable('invoice_numbers').execute();
}
