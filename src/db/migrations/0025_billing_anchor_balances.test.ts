import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ON_POSTGRES } from '../../../test/helpers/database.ts';
import { migrateToLatest } from '../migrate.ts';
import { databaseBefore, insertMigrationPlan, MIGRATION_CUSTOMER } from '../../../test/helpers/migrations.ts';

const CREATED = '2026-01-15T10:00:00.000Z';
const CUSTOMER = MIGRATION_CUSTOMER;
const PLAN = 'plan_01JD3Q7Z8X9Y0A1B2C3D4E5F6G';

function subscription(id: string, status: string, period: [string | null, string | null], trialEnd: string | null) {
  return {
    id,
    customer_id: CUSTOMER,
    plan_id: PLAN,
    status,
    current_period_start: period[0],
    current_period_end: period[1],
    trial_end: trialEnd,
    cancel_at_period_end: ON_POSTGRES ? false : 0,
    metadata: '{}',
    created_at: CREATED,
    updated_at: CREATED,
  };
}

test('0025 anchors existing subscriptions where their periods continue, and adds the credit ledger', async (t) => {
  const { handle, db } = await databaseBefore(t, '0025_billing_anchor_balances', CREATED);
  await insertMigrationPlan(db, PLAN, CREATED);
  await db
    .insertInto('subscriptions')
    .values([
      // Paid late once: its period had moved to 10:30 — the next one continues from there.
      subscription('sub_A', 'active', ['2026-02-15T10:30:00.000Z', '2026-03-15T10:30:00.000Z'], null),
      subscription('sub_B', 'trialing', [CREATED, '2026-01-29T10:00:00.000Z'], '2026-01-29T10:00:00.000Z'),
      // Awaiting its first payment: no period yet, only its first invoice.
      subscription('sub_C', 'incomplete', [null, null], null),
      subscription('sub_D', 'incomplete_expired', [null, null], null),
    ])
    .execute();
  await db
    .insertInto('invoices')
    .values({
      id: 'inv_C',
      number: 'INV-000001',
      customer_id: CUSTOMER,
      subscription_id: 'sub_C',
      status: 'open',
      currency: 'NGN',
      amount_due: 5000,
      amount_paid: 0,
      period_start: CREATED,
      period_end: '2026-02-15T10:00:00.000Z',
      due_at: CREATED,
      lines: '[]',
      hosted_token: 'token-C',
      metadata: '{}',
      created_at: CREATED,
      updated_at: CREATED,
    })
    .execute();

  assert.deepEqual(await migrateToLatest(handle), ['0025_billing_anchor_balances']);

  const rows = await db
    .selectFrom('subscriptions')
    .select(['id', 'billing_cycle_anchor', 'current_period_start', 'current_period_end'])
    .orderBy('id')
    .execute();
  const iso = (value: unknown) => (value === null ? null : new Date(value as string).toISOString());
  assert.deepEqual(
    rows.map((r) => [r.id, iso(r.billing_cycle_anchor), iso(r.current_period_start), iso(r.current_period_end)]),
    [
      ['sub_A', '2026-02-15T10:30:00.000Z', '2026-02-15T10:30:00.000Z', '2026-03-15T10:30:00.000Z'],
      ['sub_B', '2026-01-29T10:00:00.000Z', CREATED, '2026-01-29T10:00:00.000Z'],
      ['sub_C', CREATED, CREATED, '2026-02-15T10:00:00.000Z'],
      ['sub_D', CREATED, null, null],
    ],
  );

  // The ledger: signed, never 0, of the kinds SPEC §14 names.
  const entry = {
    id: 'cbtxn_A',
    customer_id: CUSTOMER,
    currency: 'NGN',
    amount: 2000,
    kind: 'overpayment',
    invoice_id: 'inv_C',
    payment_id: 'pay_gone',
    created_at: CREATED,
  };
  await db.insertInto('customer_balance_transactions').values(entry).execute();
  await db
    .insertInto('customer_balance_transactions')
    .values({ ...entry, id: 'cbtxn_B', amount: -2000, kind: 'applied_to_invoice', payment_id: null })
    .execute();
  await assert.rejects(
    db
      .insertInto('customer_balance_transactions')
      .values({ ...entry, id: 'cbtxn_C', amount: 0 })
      .execute(),
    /check/i,
  );
  await assert.rejects(
    db
      .insertInto('customer_balance_transactions')
      .values({ ...entry, id: 'cbtxn_D', kind: 'gift' })
      .execute(),
    /check/i,
  );
});
