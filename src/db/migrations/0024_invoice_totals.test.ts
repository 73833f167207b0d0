import assert from 'node:assert/strict';
import { test } from 'node:test';
import { migrateToLatest } from '../migrate.ts';
import { databaseBefore, MIGRATION_CUSTOMER } from '../../../test/helpers/migrations.ts';

const AT = '2026-01-15T10:00:00.000Z';
const END = '2026-02-15T10:00:00.000Z';

function oldLine(id: string, amount: number, quantity: number, planId: string | null) {
  return {
    id,
    description: `line ${id}`,
    amount,
    currency: 'NGN',
    quantity,
    period_start: AT,
    period_end: END,
    plan_id: planId,
  };
}

function invoice(id: string, number: string, amountDue: number, lines: object[]) {
  return {
    id,
    number,
    customer_id: MIGRATION_CUSTOMER,
    subscription_id: null,
    status: 'open',
    currency: 'NGN',
    amount_due: amountDue,
    amount_paid: 0,
    period_start: AT,
    period_end: END,
    due_at: AT,
    lines: JSON.stringify(lines),
    hosted_token: `token-${id}`,
    metadata: '{}',
    created_at: AT,
    updated_at: AT,
  };
}

test('0024 adds the totals (subtotal = total = amount_due, the rest 0) and gives stored lines kind, proration and unit_amount, in order', async (t) => {
  const { handle, db } = await databaseBefore(t, '0024_invoice_totals', AT);
  const plan = 'plan_01JD3Q7Z8X9Y0A1B2C3D4E5F6G';
  await db
    .insertInto('invoices')
    .values([
      invoice('inv_A', 'INV-000001', 5000, [oldLine('il_A', 5000, 1, plan)]),
      invoice('inv_B', 'INV-000002', 6500, [oldLine('il_B1', 5000, 1, plan), oldLine('il_B2', 1500, 3, null)]),
      invoice('inv_C', 'INV-000003', 0, []),
    ])
    .execute();

  assert.deepEqual(await migrateToLatest(handle), ['0024_invoice_totals']);

  const rows = await db
    .selectFrom('invoices')
    .select(['id', 'subtotal', 'total_discount', 'total_tax', 'total', 'applied_balance', 'amount_due', 'lines'])
    .orderBy('id')
    .execute();
  assert.deepEqual(
    rows.map((r) => [
      r.id,
      ...[r.subtotal, r.total_discount, r.total_tax, r.total, r.applied_balance, r.amount_due].map(Number),
    ]),
    [
      ['inv_A', 5000, 0, 0, 5000, 0, 5000],
      ['inv_B', 6500, 0, 0, 6500, 0, 6500],
      ['inv_C', 0, 0, 0, 0, 0, 0],
    ],
  );
  const lines = Object.fromEntries(rows.map((r) => [r.id, JSON.parse(r.lines)]));
  const upgraded = (line: ReturnType<typeof oldLine>, unitAmount: number | null) => ({
    ...line,
    kind: 'subscription',
    proration: false,
    unit_amount: unitAmount,
  });
  assert.deepEqual(lines.inv_A, [upgraded(oldLine('il_A', 5000, 1, plan), 5000)]);
  // A line of several units had no unit price recorded: null rather than a guess.
  assert.deepEqual(lines.inv_B, [
    upgraded(oldLine('il_B1', 5000, 1, plan), 5000),
    upgraded(oldLine('il_B2', 1500, 3, null), null),
  ]);
  assert.deepEqual(lines.inv_C, []);

  // New rows must say what they credit: a negative discount total or applied balance is refused.
  for (const column of ['total_discount', 'applied_balance']) {
    await assert.rejects(
      db
        .updateTable('invoices')
        .set({ [column]: -1 })
        .where('id', '=', 'inv_A')
        .execute(),
      /check/i,
      column,
    );
  }
});
