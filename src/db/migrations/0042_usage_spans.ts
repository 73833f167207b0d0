// Usage priced by the plan it was recorded under (SPEC §15 "Plan changes"): a plan change in
// the middle of a period closes the old plan's stretch of it, `usage_spans`, billed by the
// next invoice with usage at the old plan's charges; `billed_usage.plan_id` names the plan
// whose charge priced a row, so late events are adjusted at that price even after the
// subscription moved to a plan without the meter. Rows billed before this migration were
// priced by the subscription's plan of the time; its current plan is the best record left.
import { type Kysely, sql } from 'kysely';
import { columnTypes } from '../column-types.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function up(db: Kysely<any>): Promise<void> {
  const t = columnTypes(db);
  await db.schema.alterTable('billed_usage').addColumn('plan_id', 'text').execute();
  await db
    .updateTable('billed_usage')
    .set({
      plan_id: sql`(select plan_id from subscriptions where subscriptions.id = billed_usage.subscription_id)`,
    })
    .execute();
  await db.schema
    .createTable('usage_spans')
    .addColumn('subscription_id', 'text', (c) => c.notNull().references('subscriptions.id'))
    .addColumn('plan_id', 'text', (c) => c.notNull().references('plans.id'))
    .addColumn('span_start', t.timestamp, (c) => c.notNull())
    .addColumn('span_end', t.timestamp, (c) => c.notNull())
    // The invoice that billed the span's usage; null until then.
    .addColumn('invoice_id', 'text', (c) => c.references('invoices.id'))
    .addColumn('created_at', t.timestamp, (c) => c.notNull())
    .addPrimaryKeyConstraint('usage_spans_pk', ['subscription_id', 'span_start'])
    .addCheckConstraint('usage_spans_span', sql`span_start < span_end`)
    .execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('usage_spans').execute();
  await db.schema.alterTable('billed_usage').dropColumn('plan_id').execute();
}
