// Usage pricing (SPEC §15): a plan's metered charges, and what each subscription was billed
// for each meter and period. Charges are a JSON column of the plan — fixed at creation like
// its price, always read with it, never queried by their fields. `billed_usage` is the
// record of the quantity and amount billed per (subscription, meter, period): late events
// bill the difference against it on the next invoice, and a period is billed once.
import { type Kysely, sql } from 'kysely';
import { columnTypes } from '../column-types.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function up(db: Kysely<any>): Promise<void> {
  const t = columnTypes(db);
  await db.schema
    .alterTable('plans')
    .addColumn('charges', 'text', (c) => c.notNull().defaultTo('[]'))
    .execute();
  await db.schema
    .createTable('billed_usage')
    .addColumn('subscription_id', 'text', (c) => c.notNull().references('subscriptions.id'))
    .addColumn('meter_id', 'text', (c) => c.notNull())
    .addColumn('period_start', t.timestamp, (c) => c.notNull())
    .addColumn('period_end', t.timestamp, (c) => c.notNull())
    // The meter's aggregate as billed: canonical decimal text, exact on both databases.
    .addColumn('quantity', 'text', (c) => c.notNull())
    .addColumn('amount', t.bigint, (c) => c.notNull())
    // The invoice that last billed it: the usage lines' invoice, then an adjustment's.
    .addColumn('invoice_id', 'text', (c) => c.notNull().references('invoices.id'))
    .addColumn('created_at', t.timestamp, (c) => c.notNull())
    .addColumn('updated_at', t.timestamp, (c) => c.notNull())
    .addPrimaryKeyConstraint('billed_usage_pk', ['subscription_id', 'meter_id', 'period_start'])
    .addCheckConstraint('billed_usage_period', sql`period_start < period_end`)
    .execute();
  await db.schema
    .createIndex('billed_usage_by_period_end')
    .on('billed_usage')
    .columns(['subscription_id', 'period_end'])
    .execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('billed_usage').execute();
  await db.schema.alterTable('plans').dropColumn('charges').execute();
}
