import assert from 'node:assert/strict';
import { test } from 'node:test';
import { databaseBefore, MIGRATION_CUSTOMER } from '../../../test/helpers/migrations.ts';
import { migrateToLatest } from '../migrate.ts';
import { REWRITTEN_LEASE_MS } from './0049_real_time_clock_leases.ts';

const CREATED = '2026-01-15T10:00:00.000Z';
/** A clock set far ahead: its time's leases would hold until 2030 in real time. */
const CLOCK_LEASE = '2030-01-01T00:01:30.000Z';
const REAL_LEASE = '2026-01-15T10:01:30.000Z';

test("0049 rewrites the clock-time leases still held by a test clock's refunds and charges to end ten minutes from now, in real time; nothing else", async (t) => {
  const { handle, db } = await databaseBefore(t, '0049_real_time_clock_leases', CREATED, { earlierOnly: true });
  const stamps = { created_at: CREATED, updated_at: CREATED };
  await db
    .insertInto('test_clocks')
    .values({ id: 'clock_A', name: null, frozen_time: CREATED, reached_time: CREATED, status: 'ready', ...stamps })
    .execute();
  await db
    .insertInto('payments')
    .values({
      id: 'pay_A',
      customer_id: MIGRATION_CUSTOMER,
      subscription_id: null,
      provider: 'paystack',
      provider_reference: 'ref_A',
      amount: 5000,
      amount_refunded: 0,
      currency: 'NGN',
      status: 'succeeded',
      failure_reason: null,
      paid_at: CREATED,
      ...stamps,
    })
    .execute();
  const refund = (id: string, clock: string | null, extra: Record<string, unknown>) => ({
    id,
    payment_id: 'pay_A',
    provider: 'paystack',
    provider_reference: id,
    amount: 100,
    currency: 'NGN',
    status: 'pending',
    claimed_until: CLOCK_LEASE,
    resume_at: CLOCK_LEASE,
    test_clock_id: clock,
    ...stamps,
    ...extra,
  });
  await db
    .insertInto('refunds')
    .values([
      refund('re_clock_held', 'clock_A', {}),
      refund('re_clock_answered', 'clock_A', { provider_refund_id: '3018284' }),
      refund('re_clock_settled', 'clock_A', { status: 'succeeded' }),
      refund('re_clock_free', 'clock_A', { claimed_until: null }),
      refund('re_real_held', null, { claimed_until: REAL_LEASE }),
    ])
    .execute();
  const invoice = (id: string, clock: string | null) => ({
    id,
    number: `INV-${id}`,
    customer_id: MIGRATION_CUSTOMER,
    status: 'open',
    currency: 'NGN',
    amount_due: 5000,
    amount_paid: 0,
    period_start: CREATED,
    period_end: CREATED,
    due_at: CREATED,
    lines: '[]',
    hosted_token: `token-${id}`,
    metadata: '{}',
    test_clock_id: clock,
    ...stamps,
  });
  await db
    .insertInto('invoices')
    .values([invoice('inv_clock', 'clock_A'), invoice('inv_real', null)])
    .execute();
  const attempt = (id: string, invoiceId: string, extra: Record<string, unknown>) => ({
    id,
    invoice_id: invoiceId,
    provider: 'paystack',
    kind: 'charge',
    reference: `pat-${id}`,
    status: 'pending',
    amount: 5000,
    currency: 'NGN',
    locked_until: CLOCK_LEASE,
    locked_by: 'worker',
    ...stamps,
    ...extra,
  });
  await db
    .insertInto('invoice_payment_attempts')
    .values([
      attempt('pat_clock_held', 'inv_clock', {}),
      attempt('pat_clock_unknown', 'inv_clock', { status: 'unknown' }),
      attempt('pat_clock_checkout', 'inv_clock', { kind: 'checkout' }),
      attempt('pat_real_held', 'inv_real', { locked_until: REAL_LEASE }),
    ])
    .execute();

  const before = Date.now();
  assert.deepEqual(await migrateToLatest(handle), ['0049_real_time_clock_leases']);
  const after = Date.now();
  const rewritten = (value: string | null) => {
    const at = new Date(value!).getTime();
    return at >= before + REWRITTEN_LEASE_MS && at <= after + REWRITTEN_LEASE_MS;
  };
  const iso = (value: unknown) => (value === null ? null : new Date(value as string).toISOString());

  const refunds = new Map(
    (await db.selectFrom('refunds').select(['id', 'claimed_until', 'resume_at']).execute()).map((row) => [row.id, row]),
  );
  assert.ok(rewritten(refunds.get('re_clock_held')!.claimed_until), 'the held clock lease ends ten minutes from now');
  assert.equal(iso(refunds.get('re_clock_held')!.resume_at), CLOCK_LEASE, "resume_at stays in the clock's time");
  assert.equal(iso(refunds.get('re_clock_answered')!.claimed_until), CLOCK_LEASE);
  assert.equal(iso(refunds.get('re_clock_settled')!.claimed_until), CLOCK_LEASE);
  assert.equal(refunds.get('re_clock_free')!.claimed_until, null);
  assert.equal(iso(refunds.get('re_real_held')!.claimed_until), REAL_LEASE, 'real-time leases were real already');

  const attempts = new Map(
    (await db.selectFrom('invoice_payment_attempts').select(['id', 'locked_until']).execute()).map((row) => [
      row.id,
      iso(row.locked_until),
    ]),
  );
  assert.ok(rewritten(attempts.get('pat_clock_held')!));
  assert.equal(attempts.get('pat_clock_unknown'), CLOCK_LEASE);
  assert.equal(attempts.get('pat_clock_checkout'), CLOCK_LEASE);
  assert.equal(attempts.get('pat_real_held'), REAL_LEASE);
});
