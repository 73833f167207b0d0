// Credit notes (SPEC §14): a finalized invoice corrected after the fact. `credit_notes` holds
// each note (its split, its refunds, the ledger entry it made); `credit_note_numbers` keeps the
// gap-free `CN-000001` sequences (one per prefix: real time, or a test clock's own), as
// invoice_numbers does for invoices. Invoices gain what their notes took: before payment
// (lowering `amount_due`, as Stripe's pre_payment_credit_notes_amount) and after
// (post_payment_credit_notes_amount).
import { type Kysely, sql } from 'kysely';
import { columnTypes } from '../column-types.ts';

const STATUSES = ['issued', 'void'] as const;
const REASONS = ['duplicate', 'fraudulent', 'order_change', 'product_unsatisfactory'] as const;

/** `column in ('a', 'b')` for a CHECK. */
function oneOf(column: string, values: readonly string[]) {
  return sql`${sql.ref(column)} in (${sql.join(values.map((value) => sql.lit(value)))})`;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function up(db: Kysely<any>): Promise<void> {
  const t = columnTypes(db);
  await db.schema
    .createTable('credit_note_numbers')
    .addColumn('prefix', 'text', (c) => c.primaryKey())
    .addColumn('last_number', t.bigint, (c) => c.notNull())
    .execute();
  await db.schema
    .createTable('credit_notes')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('number', 'text', (c) => c.notNull().unique())
    .addColumn('invoice_id', 'text', (c) => c.notNull().references('invoices.id'))
    .addColumn('customer_id', 'text', (c) => c.notNull().references('customers.id'))
    .addColumn('currency', 'text', (c) => c.notNull())
    // Minor units: amount = pre_payment_amount + post_payment_amount, and after payment
    // post_payment_amount = refund_amount + credit_amount + out_of_band_amount.
    .addColumn('amount', t.bigint, (c) => c.notNull().check(sql`amount > 0`))
    .addColumn('pre_payment_amount', t.bigint, (c) => c.notNull().check(sql`pre_payment_amount >= 0`))
    .addColumn('post_payment_amount', t.bigint, (c) => c.notNull().check(sql`post_payment_amount >= 0`))
    .addColumn('refund_amount', t.bigint, (c) => c.notNull().check(sql`refund_amount >= 0`))
    .addColumn('credit_amount', t.bigint, (c) => c.notNull().check(sql`credit_amount >= 0`))
    .addColumn('out_of_band_amount', t.bigint, (c) => c.notNull().check(sql`out_of_band_amount >= 0`))
    .addColumn('reason', 'text', (c) => c.check(oneOf('reason', REASONS)))
    .addColumn('memo', 'text')
    // JSON arrays: the invoice lines credited, and the refunds asked ({refund_id, payment_id, amount}).
    .addColumn('lines', 'text', (c) => c.notNull())
    .addColumn('refunds', 'text', (c) => c.notNull())
    // The ledger entries the note made (credit) and its void made (reversal): the ledger's
    // rows are found from here, so the ledger's table (another migration's) is not altered.
    .addColumn('balance_transaction_id', 'text')
    .addColumn('reversal_balance_transaction_id', 'text')
    .addColumn('status', 'text', (c) => c.notNull().check(oneOf('status', STATUSES)))
    // A request's Idempotency-Key scope (hashed): its retry finds the note instead of making another.
    .addColumn('request_key', 'text', (c) => c.unique())
    .addColumn('test_clock_id', 'text')
    .addColumn('created_at', t.timestamp, (c) => c.notNull())
    .addColumn('updated_at', t.timestamp, (c) => c.notNull())
    .addColumn('voided_at', t.timestamp)
    .execute();
  await db.schema.createIndex('credit_notes_by_invoice').on('credit_notes').columns(['invoice_id', 'id']).execute();
  await db.schema.createIndex('credit_notes_by_customer').on('credit_notes').columns(['customer_id', 'id']).execute();
  await db.schema
    .createIndex('credit_notes_by_test_clock')
    .on('credit_notes')
    .columns(['test_clock_id'])
    .where(sql.ref('test_clock_id'), 'is not', null)
    .execute();

  await db.schema
    .alterTable('invoices')
    .addColumn('pre_payment_credit_notes_amount', t.bigint, (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema
    .alterTable('invoices')
    .addColumn('post_payment_credit_notes_amount', t.bigint, (c) => c.notNull().defaultTo(0))
    .execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('invoices').dropColumn('post_payment_credit_notes_amount').execute();
  await db.schema.alterTable('invoices').dropColumn('pre_payment_credit_notes_amount').execute();
  await db.schema.dropTable('credit_notes').execute();
  await db.schema.dropTable('credit_note_numbers').execute();
}
