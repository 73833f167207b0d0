// An invoice's `kind` (SPEC §9, §13): `period` — a subscription period's invoice (first
// period, renewal, paid in advance, a plan change's new period) —, `proration` — the invoice
// an `always_invoice` plan change issues at once, which belongs to its subscription (collected
// and dunned as a renewal) but bills no period of its own —, or `one_off` (no subscription).
// "Exactly one invoice per (subscription, period)" holds for period invoices only, so the
// unique index becomes partial: a proration invoice may start where a period invoice starts.
// Rows before this migration: with a subscription `period`, without one `one_off` (the
// `always_invoice` invoices issued before stay unattached: their subscription was only in metadata).
import { sql, type Kysely } from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('invoices')
    .addColumn('kind', 'text', (c) => c.notNull().defaultTo('period'))
    .execute();
  await db.updateTable('invoices').set({ kind: 'one_off' }).where('subscription_id', 'is', null).execute();
  await db.schema.dropIndex('invoices_one_per_subscription_period').execute();
  // A literal predicate: an index's WHERE takes no bound parameter.
  await db.schema
    .createIndex('invoices_one_per_subscription_period')
    .on('invoices')
    .columns(['subscription_id', 'period_start'])
    .unique()
    .where(sql.ref('kind'), '=', sql.lit('period'))
    .execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('invoices_one_per_subscription_period').execute();
  await db.schema
    .createIndex('invoices_one_per_subscription_period')
    .on('invoices')
    .columns(['subscription_id', 'period_start'])
    .unique()
    .execute();
  await db.schema.alterTable('invoices').dropColumn('kind').execute();
}
