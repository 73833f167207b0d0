// Saved payment methods (SPEC §10): a customer's reusable card or account at a provider,
// learned from a succeeded payment (Paystack `authorization` with `reusable: true`, Stripe
// `payment_intent.succeeded` with `payment_method` and `customer`). The provider credential
// that charges it (Paystack authorization_code, Stripe pm_…) is stored encrypted
// (shared/encryption.ts); only display fields are kept in the clear. One live row per
// (customer, provider, fingerprint): a card seen again is the same method. The default is the
// live method with the latest `default_at` (set when saved, and when chosen by PATCH).
import { type Kysely, sql } from 'kysely';
import { columnTypes } from '../column-types.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function up(db: Kysely<any>): Promise<void> {
  const t = columnTypes(db);
  await db.schema
    .createTable('payment_methods')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('customer_id', 'text', (c) => c.notNull().references('customers.id'))
    .addColumn('provider', 'text', (c) => c.notNull().check(sql`provider in ('paystack', 'stripe')`))
    .addColumn('status', 'text', (c) => c.notNull().check(sql`status in ('active', 'detached')`))
    .addColumn('fingerprint', 'text', (c) => c.notNull())
    .addColumn('credential', 'text', (c) => c.notNull())
    .addColumn('provider_customer_id', 'text')
    .addColumn('email', 'text')
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('brand', 'text')
    .addColumn('last4', 'text')
    .addColumn('exp_month', 'integer')
    .addColumn('exp_year', 'integer')
    .addColumn('default_at', t.timestamp, (c) => c.notNull())
    .addColumn('created_at', t.timestamp, (c) => c.notNull())
    .addColumn('updated_at', t.timestamp, (c) => c.notNull())
    .addColumn('detached_at', t.timestamp)
    .execute();
  await db.schema
    .createIndex('payment_methods_live_fingerprint')
    .on('payment_methods')
    .columns(['customer_id', 'provider', 'fingerprint'])
    .unique()
    .where(sql<boolean>`status = 'active'`)
    .execute();
  // A customer's methods, the default first (the live one with the latest default_at).
  await db.schema
    .createIndex('payment_methods_by_customer')
    .on('payment_methods')
    .columns(['customer_id', 'status', 'default_at', 'id'])
    .execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('payment_methods').execute();
}
