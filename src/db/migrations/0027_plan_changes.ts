// Plan changes, quantities and proration (SPEC §13).
// - `subscriptions.quantity`: units of the plan billed, 1 … 1,000,000 (existing rows: 1).
// - `subscriptions.pending_*`: a change scheduled for the period's end (`pending_update`),
//   applied by the renewal; all three null when none is scheduled.
// - `subscription_pending_items`: proration lines a `create_prorations` change left for the
//   subscription's next invoice, each a rounded InvoiceLineDraft (JSON); `invoice_id` is set
//   when an invoice takes it (no foreign key: a test clock's delete removes invoices first).
import { type Kysely, sql } from 'kysely';
import { columnTypes } from '../column-types.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function up(db: Kysely<any>): Promise<void> {
  const t = columnTypes(db);
  await db.schema
    .alterTable('subscriptions')
    .addColumn('quantity', 'integer', (c) =>
      c
        .notNull()
        .defaultTo(1)
        .check(sql`quantity between 1 and 1000000`),
    )
    .execute();
  await db.schema.alterTable('subscriptions').addColumn('pending_plan_id', 'text').execute();
  await db.schema.alterTable('subscriptions').addColumn('pending_quantity', 'integer').execute();
  await db.schema.alterTable('subscriptions').addColumn('pending_effective_at', t.timestamp).execute();
  await db.schema
    .createTable('subscription_pending_items')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('subscription_id', 'text', (c) => c.notNull().references('subscriptions.id'))
    .addColumn('line', 'text', (c) => c.notNull())
    .addColumn('invoice_id', 'text')
    .addColumn('created_at', t.timestamp, (c) => c.notNull())
    .addColumn('test_clock_id', 'text')
    .execute();
  // The next invoice reads a subscription's items not yet invoiced, oldest first.
  await db.schema
    .createIndex('subscription_pending_items_waiting')
    .on('subscription_pending_items')
    .columns(['subscription_id', 'id'])
    .where(sql.ref('invoice_id'), 'is', null)
    .execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('subscription_pending_items').execute();
  for (const column of ['pending_effective_at', 'pending_quantity', 'pending_plan_id', 'quantity']) {
    await db.schema.alterTable('subscriptions').dropColumn(column).execute();
  }
}
