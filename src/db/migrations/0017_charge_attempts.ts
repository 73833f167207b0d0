// Automatic charges (SPEC §10 "Automatic collection"): a charge attempt is committed under a
// LEASE before its provider call, so two workers never call the provider for one attempt at
// once and a crashed worker's attempt is found again when its lease runs out. The attempt
// also remembers the saved method it charges, so resolving it later repeats the very same
// request (Stripe's Idempotency-Key demands the same parameters). Invoices due for a charge
// (`next_payment_attempt_at`) are found through a partial index of open invoices.
import type { Kysely } from 'kysely';
import { sql } from 'kysely';
import { columnTypes } from '../column-types.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function up(db: Kysely<any>): Promise<void> {
  const t = columnTypes(db);
  await db.schema.alterTable('invoice_payment_attempts').addColumn('payment_method_id', 'text').execute();
  await db.schema.alterTable('invoice_payment_attempts').addColumn('locked_until', t.timestamp).execute();
  await db.schema.alterTable('invoice_payment_attempts').addColumn('locked_by', 'text').execute();
  await db.schema
    .createIndex('invoices_due_for_charge')
    .on('invoices')
    .columns(['next_payment_attempt_at', 'id'])
    .where(sql<boolean>`status = 'open' and next_payment_attempt_at is not null`)
    .execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('invoices_due_for_charge').execute();
  await db.schema.alterTable('invoice_payment_attempts').dropColumn('locked_by').execute();
  await db.schema.alterTable('invoice_payment_attempts').dropColumn('locked_until').execute();
  await db.schema.alterTable('invoice_payment_attempts').dropColumn('payment_method_id').execute();
}
