import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ON_POSTGRES } from '../../../test/helpers/database.ts';
import { databaseBefore, insertMigrationPlan, MIGRATION_CUSTOMER } from '../../../test/helpers/migrations.ts';
import { migrateToLatest } from '../migrate.ts';

const CREATED = '2026-01-15T10:00:00.000Z';
const END = '2026-02-15T10:00:00.000Z';

/** An invoice row as the schema stood at 0040, of `subscriptionId` (null: none) from `periodStart`. */
function invoice(
  id: string,
  subscriptionId: string | null,
  periodStart = CREATED,
  extra: Record<string, unknown> = {},
) {
  return {
    id,
    number: `INV-${id}`,
    customer_id: MIGRATION_CUSTOMER,
    subscription_id: subscriptionId,
    status: 'open',
    currency: 'NGN',
    amount_due: 5000,
    amount_paid: 0,
    period_start: periodStart,
    period_end: END,
    due_at: periodStart,
    lines: '[]',
    hosted_token: `token-${id}`,
    metadata: '{}',
    created_at: CREATED,
    updated_at: CREATED,
    ...extra,
  };
}

test("0041 backfills each invoice's kind — period with a subscription, one_off without — and keeps one period invoice per (subscription, period)", async (t) => {
  const { handle, db } = await databaseBefore(t, '0041_invoice_kinds', CREATED, { earlierOnly: true });
  await insertMigrationPlan(db, 'plan_A', CREATED);
  await db
    .insertInto('subscriptions')
    .values({
      id: 'sub_A',
      customer_id: MIGRATION_CUSTOMER,
      plan_id: 'plan_A',
      status: 'active',
      current_period_start: '2026-02-15T10:00:00.000Z',
      current_period_end: '2026-03-15T10:00:00.000Z',
      billing_cycle_anchor: CREATED,
      cancel_at_period_end: ON_POSTGRES ? false : 0,
      metadata: '{}',
      created_at: CREATED,
      updated_at: CREATED,
    })
    .execute();
  await db
    .insertInto('invoices')
    .values([
      invoice('inv_first', 'sub_A', CREATED, { status: 'paid', amount_paid: 5000, paid_at: CREATED }),
      invoice('inv_renewal', 'sub_A', END),
      // An `always_invoice` invoice issued before kinds existed: its subscription only in metadata.
      invoice('inv_change', null, '2026-01-20T10:00:00.000Z', { metadata: '{"subscription_id":"sub_A"}' }),
      invoice('inv_void', null, CREATED, { status: 'void', voided_at: CREATED }),
    ])
    .execute();

  const applied = await migrateToLatest(handle);
  assert.equal(applied[0], '0041_invoice_kinds', applied.join(', '));

  const rows = await db
    .selectFrom('invoices')
    .select(['id', 'kind', 'status', 'subscription_id'])
    .orderBy('id')
    .execute();
  assert.deepEqual(
    rows.map((row: { id: string; kind: string; status: string; subscription_id: string | null }) => [
      row.id,
      row.kind,
      row.status,
      row.subscription_id,
    ]),
    [
      ['inv_change', 'one_off', 'open', null],
      ['inv_first', 'period', 'paid', 'sub_A'],
      ['inv_renewal', 'period', 'open', 'sub_A'],
      ['inv_void', 'one_off', 'void', null],
    ],
  );

  // A new row takes kind `period` unless told; two period invoices of one period are still refused,
  // while a proration invoice may start where a period invoice starts.
  await assert.rejects(
    db
      .insertInto('invoices')
      .values(invoice('inv_twice', 'sub_A', END))
      .execute(),
  );
  await db
    .insertInto('invoices')
    .values(invoice('inv_proration', 'sub_A', END, { kind: 'proration' }))
    .execute();
  const added = await db
    .selectFrom('invoices')
    .select('kind')
    .where('id', '=', 'inv_proration')
    .executeTakeFirstOrThrow();
  assert.equal(added.kind, 'proration');
});
