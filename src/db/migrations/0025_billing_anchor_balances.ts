// Invoices are the unit (SPEC §4, §12): a subscription's periods follow its billing cycle
// anchor, whenever they are paid, and what a payment leaves over is the customer's credit.
// - `subscriptions.billing_cycle_anchor`: where its periods are counted from. Existing rows
//   take the start of their current period (their next period starts at its end, as before),
//   a trial its end; an `incomplete` one, whose period was empty until paid, gets its first
//   invoice's period (the period it now shows from creation) and that start as its anchor.
// - `customer_balance_transactions`: the append-only credit ledger, per customer and
//   currency; the balance is the sum of its amounts (SPEC §14).
import { type Kysely, sql } from 'kysely';
import { columnTypes, isPostgres } from '../column-types.ts';

/** Every kind SPEC §14 names, so the later ledger work needs no migration of the check. */
const KINDS = ['adjustment', 'credit_note', 'applied_to_invoice', 'overpayment', 'reversal'] as const;

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function up(db: Kysely<any>): Promise<void> {
  const t = columnTypes(db);
  await db.schema.alterTable('subscriptions').addColumn('billing_cycle_anchor', t.timestamp).execute();
  await sql`
    update subscriptions set
      current_period_start = (select min(period_start) from invoices where invoices.subscription_id = subscriptions.id),
      current_period_end = (
        select period_end from invoices where invoices.subscription_id = subscriptions.id
        order by period_start limit 1
      )
    where status = 'incomplete' and current_period_start is null`.execute(db);
  await sql`
    update subscriptions set billing_cycle_anchor = coalesce(
      case when status = 'trialing' then trial_end end, current_period_start, created_at
    )`.execute(db);
  // SQLite adds no NOT NULL column without a default; the writer always sets it there.
  if (isPostgres(db)) {
    await sql`alter table subscriptions alter column billing_cycle_anchor set not null`.execute(db);
  }

  await db.schema
    .createTable('customer_balance_transactions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('customer_id', 'text', (c) => c.notNull().references('customers.id'))
    .addColumn('currency', 'text', (c) => c.notNull())
    // Signed minor units: a credit to the customer is positive, credit used is negative.
    .addColumn('amount', t.bigint, (c) => c.notNull().check(sql`amount <> 0`))
    .addColumn('kind', 'text', (c) => c.notNull().check(sql`kind in (${sql.join(KINDS.map((kind) => sql.lit(kind)))})`))
    .addColumn('invoice_id', 'text', (c) => c.references('invoices.id'))
    // No foreign key: a payment merged into another (Stripe's two references) is deleted.
    .addColumn('payment_id', 'text')
    .addColumn('created_at', t.timestamp, (c) => c.notNull())
    .addColumn('test_clock_id', 'text')
    .execute();
  // The balance of one customer in one currency is a sum over this index.
  await db.schema
    .createIndex('customer_balance_transactions_by_customer')
    .on('customer_balance_transactions')
    .columns(['customer_id', 'currency', 'id'])
    .execute();
  await db.schema
    .createIndex('customer_balance_transactions_by_test_clock')
    .on('customer_balance_transactions')
    .columns(['test_clock_id'])
    .where(sql.ref('test_clock_id'), 'is not', null)
    .execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('customer_balance_transactions').execute();
  await db.schema.alterTable('subscriptions').dropColumn('billing_cycle_anchor').execute();
}
