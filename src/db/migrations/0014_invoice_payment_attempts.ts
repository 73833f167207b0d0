// Payment attempts (SPEC §10): every time the service asks a provider to collect an invoice —
// a checkout link today, an automatic charge later — one row, committed BEFORE the provider
// call. Its `reference` is ours, unique, and is what the provider receives (Paystack's
// `reference`, Stripe's `client_reference_id` and Idempotency-Key), so a retry, a crash or
// the provider's webhook can always be matched back to this row and the call repeated safely.
import { type Kysely, sql } from 'kysely';
import { columnTypes } from '../column-types.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function up(db: Kysely<any>): Promise<void> {
  const t = columnTypes(db);
  await db.schema
    .createTable('invoice_payment_attempts')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('invoice_id', 'text', (c) => c.notNull().references('invoices.id'))
    .addColumn('provider', 'text', (c) => c.notNull().check(sql`provider in ('paystack', 'stripe')`))
    .addColumn('kind', 'text', (c) => c.notNull().check(sql`kind in ('checkout', 'charge')`))
    .addColumn('reference', 'text', (c) => c.notNull().unique())
    .addColumn('status', 'text', (c) =>
      c.notNull().check(sql`status in ('pending', 'unknown', 'requires_action', 'succeeded', 'failed')`),
    )
    .addColumn('amount', t.bigint, (c) => c.notNull().check(sql`amount > 0`))
    .addColumn('currency', 'text', (c) => c.notNull())
    .addColumn('provider_object_id', 'text')
    .addColumn('url', 'text')
    .addColumn('expires_at', t.timestamp)
    .addColumn('failure_code', 'text')
    .addColumn('failure_message', 'text')
    .addColumn('created_at', t.timestamp, (c) => c.notNull())
    .addColumn('updated_at', t.timestamp, (c) => c.notNull())
    .execute();
  // An invoice's attempts, oldest first (GET /api/invoices/{id} lists them).
  await db.schema
    .createIndex('invoice_payment_attempts_by_invoice')
    .on('invoice_payment_attempts')
    .columns(['invoice_id', 'created_at', 'id'])
    .execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('invoice_payment_attempts').execute();
}
