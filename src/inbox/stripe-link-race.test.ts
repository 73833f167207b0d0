// Two Stripe renewals whose reports are processed by two batches at once (SPEC §5: one
// payment per provider payment, whatever the order and batching). Each batch records one
// renewal's PaymentIntent and then links the OTHER renewal's invoice to its PaymentIntent, so
// each holds a reference the other's link needs: a deadlock. The batches run row by row in
// savepoints (an unusable event first in each makes their one-transaction attempt fail), where
// a rerun that kept the earlier rows' locks formed the same cycle again at every rerun until
// a link row failed for good, leaving that renewal's charge as two payments (in_… and pi_…).
// On PostgreSQL a third transaction holds both invoices' reference locks until both batches
// wait on it, so the cycle forms every time rather than by chance. A second test pins the
// lock order that keeps batches out of such cycles in the first place (PostgreSQL only).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sql } from 'kysely';
import { buildTestApp, type TestApp } from '../../test/helpers/app.ts';
import { ON_POSTGRES } from '../../test/helpers/database.ts';
import { createSubscription } from '../../test/helpers/factories.ts';
import {
  nextSeq,
  PROVIDER_ENV,
  stripeEvent,
  stripeInvoice,
  stripeInvoicePayment,
  stripePaymentIntent,
} from '../../test/helpers/provider-events.ts';
import { storeEvents } from './inbox.ts';
import { processEvents } from './inbox.batches.ts';
import type { ProviderEventRow } from '../db/tables/provider-events.table.ts';
import { findProvider } from '../providers/registry.ts';

const BASIL = '2025-05-28.basil';

async function paidRenewal(app: TestApp) {
  const subscription = await createSubscription(app, { plan: { currency: 'USD', amount: 2000 } });
  const intent = stripePaymentIntent({ amount: 2000, email: null });
  const invoice = stripeInvoice({
    style: 'basil',
    subscription: `sub_${nextSeq()}`,
    amount: 2000,
    subscriptionMetadata: { subscription_id: subscription.id },
  });
  const events = {
    invoice: stripeEvent('invoice.paid', invoice, { apiVersion: BASIL }),
    intent: stripeEvent('payment_intent.succeeded', intent, { apiVersion: BASIL }),
    link: stripeEvent(
      'invoice_payment.paid',
      stripeInvoicePayment({ invoice: invoice.id, paymentIntent: intent.id, amount: 2000 }),
      { apiVersion: BASIL },
    ),
  };
  return { subscription, intent, invoice, events };
}

/** Stores `bodies` in the inbox as the Stripe route would; returns the rows to process. */
async function store(app: TestApp, bodies: readonly object[]) {
  const adapter = findProvider('stripe')!;
  const rows = await storeEvents(
    app.deps.db,
    app.clock,
    bodies.map((body) => {
      const raw = Buffer.from(JSON.stringify(body));
      return { provider: 'stripe', ...adapter.identify(body, raw), payload: raw.toString('utf8') };
    }),
  );
  return rows.map((row, i) => ({ id: row!.id, row: row as ProviderEventRow, body: bodies[i] }));
}

async function waitersOf(app: TestApp, pid: number): Promise<number> {
  const { rows } = await sql<{ n: number }>`
    select count(*)::int as n from pg_stat_activity where ${pid} = any(pg_blocking_pids(pid))`.execute(app.deps.db);
  return rows[0]!.n;
}

test('two batches that each link the renewal the other records wait for each other once, and both links merge', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const a = await paidRenewal(app);
  const b = await paidRenewal(app);
  // Both invoices are recorded first (payments keyed by in_…).
  await processEvents(app.deps.db, app.deps, await store(app, [a.events.invoice, b.events.invoice]));
  // An event that cannot be used (no data.object): each batch then runs row by row.
  const unusable = () => ({ id: `evt_${nextSeq()}`, type: 'payment_intent.succeeded', api_version: BASIL, data: {} });
  const first = await store(app, [unusable(), b.events.intent, a.events.link]);
  const second = await store(app, [unusable(), a.events.intent, b.events.link]);

  if (ON_POSTGRES) {
    const blocker = await app.deps.db.startTransaction().execute();
    try {
      const { rows } = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(blocker);
      const pid = rows[0]!.pid;
      for (const invoice of [a.invoice.id, b.invoice.id]) {
        await sql`select pg_advisory_xact_lock(hashtextextended(${`payment:stripe:${invoice}`}, 0))`.execute(blocker);
      }
      const batches = [processEvents(app.deps.db, app.deps, first), processEvents(app.deps.db, app.deps, second)];
      // Each batch has recorded its PaymentIntent and waits to link the other renewal's invoice.
      while ((await waitersOf(app, pid)) < 2);
      await blocker.commit().execute();
      assert.deepEqual(await Promise.all(batches), [
        ['failed', 'processed', 'processed'],
        ['failed', 'processed', 'processed'],
      ]);
    } catch (error) {
      await blocker
        .rollback()
        .execute()
        .catch(() => {});
      throw error;
    }
  } else {
    await processEvents(app.deps.db, app.deps, first);
    await processEvents(app.deps.db, app.deps, second);
  }

  const payments = await app.deps.db
    .selectFrom('payments')
    .select(['provider_reference', 'subscription_id', 'status'])
    .orderBy('provider_reference')
    .execute();
  assert.deepEqual(
    payments.map((row) => ({ ...row })),
    [a, b]
      .map((renewal) => ({
        provider_reference: renewal.intent.id,
        subscription_id: renewal.subscription.id,
        status: 'succeeded',
      }))
      .sort((x, y) => (x.provider_reference < y.provider_reference ? -1 : 1)),
  );
  for (const { subscription } of [a, b]) {
    const after = (await app.request('GET', `/api/subscriptions/${subscription.id}`)).body;
    assert.equal(after.current_period_end, '2026-02-15T10:00:00.000Z', 'one period paid, once');
  }
  const links = await app.deps.db
    .selectFrom('provider_events')
    .select(['status', 'attempts'])
    .where('event_type', '=', 'invoice_payment.paid')
    .execute();
  assert.deepEqual(
    links.map((row) => ({ ...row })),
    [
      { status: 'processed', attempts: 1 },
      { status: 'processed', attempts: 1 },
    ],
  );
});

test(
  'a batch waiting for one of its references holds none of the others: it takes them all at once, in one order',
  { skip: !ON_POSTGRES },
  async (t) => {
    const app = await buildTestApp(t, { env: PROVIDER_ENV });
    const a = await paidRenewal(app);
    const b = await paidRenewal(app);
    // b's PaymentIntent report, then the link of a's invoice (in_…, held by another transaction).
    const batch = await store(app, [b.events.intent, a.events.link]);
    const lockOf = (reference: string) => sql`hashtextextended(${`payment:stripe:${reference}`}, 0)`;
    const blocker = await app.deps.db.startTransaction().execute();
    try {
      const { rows } = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(blocker);
      const pid = rows[0]!.pid;
      await sql`select pg_advisory_xact_lock(${lockOf(a.invoice.id)})`.execute(blocker);
      const processing = processEvents(app.deps.db, app.deps, batch);
      while ((await waitersOf(app, pid)) < 1);
      // Had the batch recorded b's PaymentIntent before waiting, it would hold pi_… while it
      // waits: a cycle with any batch that holds in_… and wants pi_….
      const probe = await app.deps.db.startTransaction().execute();
      const free = await sql<{ free: boolean }>`select pg_try_advisory_xact_lock(${lockOf(b.intent.id)}) as free`
        .execute(probe)
        .finally(() => probe.rollback().execute());
      assert.equal(free.rows[0]!.free, true, `${b.intent.id} is not locked by a batch still waiting`);
      await blocker.commit().execute();
      assert.deepEqual(await processing, ['processed', 'processed']);
    } catch (error) {
      await blocker
        .rollback()
        .execute()
        .catch(() => {});
      throw error;
    }
    const payments = await app.deps.db.selectFrom('payments').select('provider_reference').execute();
    assert.deepEqual(
      payments.map((row) => row.provider_reference),
      [b.intent.id],
    );
  },
);
