// Payment reference aliases (SPEC §5): a provider may name one payment by two ids —
// Stripe API ≥ 2025-03-31 reports an invoice's payment by the invoice id (`in_…`) while
// `payment_intent.*` names the PaymentIntent (`pi_…`); `invoice_payment.paid` tells they are
// one. Each alias maps to the canonical reference the payment is keyed by.
import type { Kysely } from 'kysely';
import { columnTypes } from '../column-types.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function up(db: Kysely<any>): Promise<void> {
  const t = columnTypes(db);
  await db.schema
    .createTable('payment_references')
    .addColumn('provider', 'text', (c) => c.notNull())
    .addColumn('reference', 'text', (c) => c.notNull())
    .addColumn('canonical_reference', 'text', (c) => c.notNull())
    .addColumn('created_at', t.timestamp, (c) => c.notNull())
    .addPrimaryKeyConstraint('payment_references_pkey', ['provider', 'reference'])
    .execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('payment_references').execute();
}
