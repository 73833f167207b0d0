// A refund and its payment processed at the same time (SPEC §5 "whatever the order"): the
// refund must not be held after its payment has looked for held refunds, or it would wait
// forever. On PostgreSQL the two run in concurrent transactions; the refund's transaction
// is kept open (behind a subscription lock another transaction holds) while the payment's
// runs, which is the window a plain request pair hits by chance.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sql } from 'kysely';
import { buildTestApp, type TestApp } from '../../test/helpers/app.ts';
import { ON_POSTGRES } from '../../test/helpers/database.ts';
import { createSubscription } from '../../test/helpers/factories.ts';
import { PROVIDER_ENV, paystackCharge, paystackRefund } from '../../test/helpers/provider-events.ts';
import { storeEvents } from './inbox.ts';
import { processEvents } from './inbox.batches.ts';

function store(app: TestApp, body: { event: string; data: Record<string, unknown> }, key: string) {
  return storeEvents(app.deps.db, app.clock, [
    { provider: 'paystack', key, type: body.event, payload: JSON.stringify(body) },
  ]);
}

/** Backends waiting (directly) on one that waits on `pid`: a chain of two lock waits. */
async function waitersBehindWaitersOf(app: TestApp, pid: number): Promise<number> {
  const { rows } = await sql<{ n: number }>`
    select count(*)::int as n from pg_stat_activity a
    where exists (
      select 1 from pg_stat_activity b
      where ${pid} = any(pg_blocking_pids(b.pid)) and b.pid = any(pg_blocking_pids(a.pid))
    )`.execute(app.deps.db);
  return rows[0]!.n;
}

async function waitersOf(app: TestApp, pid: number): Promise<number> {
  const { rows } = await sql<{ n: number }>`
    select count(*)::int as n from pg_stat_activity where ${pid} = any(pg_blocking_pids(pid))`.execute(app.deps.db);
  return rows[0]!.n;
}

test('a refund held while its payment is being recorded concurrently is applied, not held forever', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const subscription = await createSubscription(app, { plan: { currency: 'NGN', amount: 5000 } });
  const charge = paystackCharge({ amount: 9000, email: 'race.payer@example.com' });
  const refund = paystackRefund({ transactionReference: charge.data.reference, amount: '4000' });
  // Another payment, processed in the refund's transaction after it, that waits on a lock.
  const other = paystackCharge({ amount: 5000, metadata: { subscription_id: subscription.id } });
  const [refundRow] = await store(
    app,
    refund,
    `refund.processed:${charge.data.reference}:${refund.data.refund_reference}`,
  );
  const [otherRow] = await store(app, other, `charge.success:${other.data.id}`);
  const [chargeRow] = await store(app, charge, `charge.success:${charge.data.id}`);
  assert.ok(refundRow && otherRow && chargeRow);

  if (ON_POSTGRES) {
    const blocker = await app.deps.db.startTransaction().execute();
    try {
      const { rows } = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(blocker);
      const pid = rows[0]!.pid;
      await blocker.selectFrom('subscriptions').select('id').where('id', '=', subscription.id).forUpdate().execute();
      // The refund finds no payment and is marked held; its transaction then waits on the lock.
      const refundSide = processEvents(app.deps.db, app.deps, [
        { id: refundRow.id, row: refundRow },
        { id: otherRow.id, row: otherRow },
      ]);
      while ((await waitersOf(app, pid)) === 0);
      // Meanwhile the payment is recorded (or waits for the refund's transaction to end).
      let paymentDone = false;
      const paymentSide = processEvents(app.deps.db, app.deps, [{ id: chargeRow.id, row: chargeRow }]).finally(() => {
        paymentDone = true;
      });
      while (!paymentDone && (await waitersBehindWaitersOf(app, pid)) === 0);
      await blocker.commit().execute();
      await Promise.all([refundSide, paymentSide]);
    } catch (error) {
      await blocker
        .rollback()
        .execute()
        .catch(() => {});
      throw error;
    }
  } else {
    await processEvents(app.deps.db, app.deps, [
      { id: refundRow.id, row: refundRow },
      { id: otherRow.id, row: otherRow },
    ]);
    await processEvents(app.deps.db, app.deps, [{ id: chargeRow.id, row: chargeRow }]);
  }

  const payment = await app.deps.db
    .selectFrom('payments')
    .selectAll()
    .where('provider_reference', '=', charge.data.reference)
    .executeTakeFirstOrThrow();
  assert.equal(Number(payment.amount_refunded), 4000);
  assert.equal(payment.status, 'partially_refunded');
  const row = await app.deps.db
    .selectFrom('provider_events')
    .selectAll()
    .where('id', '=', refundRow.id)
    .executeTakeFirstOrThrow();
  assert.equal(row.status, 'processed');
});
