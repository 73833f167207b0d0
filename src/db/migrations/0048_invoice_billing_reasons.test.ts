import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ON_POSTGRES } from '../../../test/helpers/database.ts';
import { databaseBefore, insertMigrationPlan, MIGRATION_CUSTOMER } from '../../../test/helpers/migrations.ts';
import { migrateToLatest } from '../migrate.ts';

const CREATED = '2026-01-15T10:00:00.000Z';
const END = '2026-02-15T10:00:00.000Z';
const LATER = '2026-03-15T10:00:00.000Z';

/** An invoice row as the schema stood at 0047: `kind` of `subscriptionId` (null: none) from `periodStart`. */
function invoice(
  id: string,
  kind: string,
  subscriptionId: string | null,
  periodStart: string,
  extra: Record<string, unknown> = {},
) {
  return {
    id,
    number: `INV-${id}`,
    customer_id: MIGRATION_CUSTOMER,
    subscription_id: subscriptionId,
    kind,
    status: 'open',
    currency: 'NGN',
    amount_due: 5000,
    amount_paid: 0,
    period_start: periodStart,
    period_end: LATER,
    due_at: periodStart,
    lines: '[]',
    hosted_token: `token-${id}`,
    metadata: '{}',
    created_at: CREATED,
    updated_at: CREATED,
    ...extra,
  };
}

/** A subscription row as the schema stood at 0047; `trialEnd` null: created without a trial. */
function subscription(id: string, trialEnd: string | null) {
  return {
    id,
    customer_id: MIGRATION_CUSTOMER,
    plan_id: 'plan_A',
    status: 'active',
    current_period_start: END,
    current_period_end: LATER,
    trial_end: trialEnd,
    billing_cycle_anchor: trialEnd ?? CREATED,
    cancel_at_period_end: ON_POSTGRES ? false : 0,
    metadata: '{}',
    created_at: CREATED,
    updated_at: CREATED,
  };
}

test("0048 backfills each invoice's billing_reason from its kind, and subscription_create for a subscription's first period invoice issued at its creation", async (t) => {
  const { handle, db } = await databaseBefore(t, '0048_invoice_billing_reasons', CREATED, { earlierOnly: true });
  await insertMigrationPlan(db, 'plan_A', CREATED);
  await db
    .insertInto('subscriptions')
    .values([subscription('sub_A', null), subscription('sub_B', null), subscription('sub_T', END)])
    .execute();
  await db
    .insertInto('invoices')
    .values([
      // Inserted out of period order: the earliest period, not the first row, is the first invoice.
      invoice('inv_a_renewal', 'period', 'sub_A', END),
      invoice('inv_a_first', 'period', 'sub_A', CREATED, { status: 'paid', amount_paid: 5000, paid_at: CREATED }),
      invoice('inv_a_change', 'proration', 'sub_A', '2026-01-20T10:00:00.000Z'),
      invoice('inv_a_usage', 'usage', 'sub_A', CREATED),
      // A first invoice voided when its subscription expired unpaid is still its creation's.
      invoice('inv_b_first', 'period', 'sub_B', CREATED, { status: 'void', voided_at: END }),
      // A trial's first invoice is issued at its end: a cycle, as Stripe's.
      invoice('inv_t_trial_end', 'period', 'sub_T', END),
      invoice('inv_t_renewal', 'period', 'sub_T', LATER),
      invoice('inv_one_off', 'one_off', null, CREATED),
    ])
    .execute();

  const applied = await migrateToLatest(handle);
  assert.equal(applied[0], '0048_invoice_billing_reasons', applied.join(', '));

  const rows = await db.selectFrom('invoices').select(['id', 'billing_reason']).orderBy('id').execute();
  assert.deepEqual(
    rows.map((row: { id: string; billing_reason: string }) => [row.id, row.billing_reason]),
    [
      ['inv_a_change', 'subscription_update'],
      ['inv_a_first', 'subscription_create'],
      ['inv_a_renewal', 'subscription_cycle'],
      ['inv_a_usage', 'subscription_cycle'],
      ['inv_b_first', 'subscription_create'],
      ['inv_one_off', 'manual'],
      ['inv_t_renewal', 'subscription_cycle'],
      ['inv_t_trial_end', 'subscription_cycle'],
    ],
  );
});
