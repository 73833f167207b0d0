// Exactly once at scale across a crash (SPEC §10, §11): 10,000 clock subscriptions with saved
// Paystack cards, one month advanced, and the service process killed with SIGKILL mid-run —
// after some renewals were charged, before all were. A new process on the same database
// resumes the advance: when the clock is first `ready` after that, every renewal invoice is
// paid exactly once, one payment each, one charge each at the (fake) provider, no event
// emitted twice. Black box: it holds whatever the issuing and charging code is. Slow (minutes): runs only with SCALE_TESTS=1 (.ci/run runs it
// on both databases); KILL_RUN_N sets the number of subscriptions (default 10,000).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { applySuccessfulPayment } from '../src/billing/subscription-payments.ts';
import { createSubscription } from '../src/billing/subscriptions.ts';
import { loadConfig } from '../src/config.ts';
import { createDeps } from '../src/deps.ts';
import { createCustomer } from '../src/modules/customers/customers.service.ts';
import { createPlan } from '../src/modules/plans/plans.service.ts';
import { createTestClock } from '../src/modules/test-clocks/test-clocks.service.ts';
import { systemClock } from '../src/shared/clock.ts';
import { FakePaystack } from './helpers/fake-paystack.ts';
import { multiplyClockCustomers } from './helpers/multiply.ts';
import { saveTestCard } from './helpers/payment-methods.ts';
import { DATA_ENCRYPTION_KEY, PAYSTACK_SECRET } from './helpers/provider-events.ts';
import { eventually, ownDatabaseUrl, startService } from './helpers/service.ts';

const N = Number(process.env.KILL_RUN_N ?? 10_000);
const START = '2026-01-01T00:00:00.000Z';
const NEXT_MONTH = '2026-02-01T00:00:00.000Z';
/** A bound for a run on a loaded CI machine (PostgreSQL: ≈ 20 ms of CPU per renewal there). */
const RUN_TIMEOUT_MS = 20 * 60_000;

test(
  `SIGKILL mid-run at ${N.toLocaleString('en-US')} renewals: every renewal paid exactly once after the restart`,
  {
    skip: process.env.SCALE_TESTS !== '1' && 'SCALE_TESTS=1 runs it (slow; .ci/run does)',
    timeout: 2 * RUN_TIMEOUT_MS,
  },
  async (t) => {
    const databaseUrl = await ownDatabaseUrl(t);
    const paystack = await FakePaystack.start(t);
    const key = `kill_run_${randomBytes(12).toString('hex')}`;

    // One clock customer seeded through the services (its first period paid, a saved card),
    // copied by SQL to N.
    const deps = await createDeps(
      loadConfig({ DATABASE_URL: databaseUrl, DATA_ENCRYPTION_KEY, LOG_LEVEL: 'silent', TEST_CLOCKS: 'true' }),
      { clock: systemClock },
    );
    t.after(() => deps.close());
    const clock = await createTestClock(deps.db, deps.clock, { frozen_time: START, name: 'kill run' });
    const plan = await createPlan(deps.db, deps.clock, {
      name: 'Monthly',
      amount: 5000,
      currency: 'NGN',
      interval: 'month',
    });
    const customer = await createCustomer(
      deps.db,
      deps.clock,
      { email: 'renew@example.com', test_clock: clock.id },
      { testClocks: true },
    );
    const subscription = await createSubscription(deps.db, deps, { customer_id: customer.id, plan_id: plan.id });
    await deps.db.transaction().execute(async (trx) => {
      await applySuccessfulPayment(trx, deps, subscription.id);
      await saveTestCard(trx, deps, customer.id, 'paystack');
    });
    assert.equal(await multiplyClockCustomers(databaseUrl, clock.id, N - 1), N);
    const seededEvents = new Set((await deps.db.selectFrom('events').select('id').execute()).map((event) => event.id));

    const env = {
      DATABASE_URL: databaseUrl,
      API_KEYS: key,
      PAYSTACK_SECRET_KEY: PAYSTACK_SECRET,
      PAYSTACK_API_URL: paystack.url,
      DATA_ENCRYPTION_KEY,
      TEST_CLOCKS: 'true',
      WORKER_POLL_INTERVAL: '100ms',
      // A charge's lease is twice this: the killed process's charges in flight lapse 4 s after their claim.
      PROVIDER_TIMEOUT: '2s',
      RATE_LIMIT_MAX: '0',
    };
    const first = await startService(t, env);
    const advance = await fetch(`${first.url}/api/test-clocks/${clock.id}/advance`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ frozen_time: NEXT_MONTH }),
    });
    assert.equal(advance.status, 202, await advance.text());

    // Killed once a tenth of the renewals were paid (recorded), others charged or in flight.
    await eventually(async () => (await paidRenewals()) >= N / 10, RUN_TIMEOUT_MS, 'a tenth of the renewals paid');
    first.child.kill('SIGKILL');
    await first.exited;
    const paidAtKill = await paidRenewals();
    assert.ok(paidAtKill > 0 && paidAtKill < N, `killed mid-run: ${paidAtKill} of ${N} renewals paid`);
    // The dead process's lease on the advance would lapse 60 s after its last renewal
    // (ADVANCE_LEASE_MS); lapsed now instead of waited for.
    await deps.db
      .updateTable('test_clocks')
      .set({ lease_expires_at: new Date().toISOString() })
      .where('id', '=', clock.id)
      .execute();

    const second = await startService(t, env);
    const ready = (message: string) =>
      eventually(
        async () => {
          const row = await deps.db
            .selectFrom('test_clocks')
            .select('status')
            .where('id', '=', clock.id)
            .executeTakeFirst();
          return row?.status === 'ready';
        },
        RUN_TIMEOUT_MS,
        `${message}:\n${second.output().slice(-4000)}`,
      );
    await ready('the clock ready after the restart');
    // The charges the killed process had in flight are due again one lease past the renewal
    // instant in the clock's time, past the target; their leases lapse in real time, and the
    // restarted advance asks the provider about them (verify) before it ends `ready`.
    assert.equal(await paidRenewals(), N, 'every renewal paid when the clock is first ready after the restart');
    const verified = paystack.calls.filter((call) => call.path.startsWith('/transaction/verify/')).length;
    second.child.kill('SIGTERM');
    await second.exited;

    // Every renewal invoice paid, exactly one of them per subscription.
    const invoices = await deps.db
      .selectFrom('invoices')
      .select(['id', 'subscription_id', 'status', 'amount_paid'])
      .where('test_clock_id', '=', clock.id)
      .where('period_start', '=', NEXT_MONTH)
      .execute();
    assert.equal(invoices.length, N, 'one renewal invoice per subscription');
    assert.equal(new Set(invoices.map((invoice) => invoice.subscription_id)).size, N);
    assert.ok(invoices.every((invoice) => invoice.status === 'paid' && Number(invoice.amount_paid) === 5000));

    // One payment each.
    const payments = await deps.db
      .selectFrom('payments')
      .innerJoin('invoices', 'invoices.id', 'payments.invoice_id')
      .select(['payments.invoice_id', 'payments.provider_reference'])
      .where('invoices.test_clock_id', '=', clock.id)
      .where('invoices.period_start', '=', NEXT_MONTH)
      .execute();
    assert.equal(payments.length, N, 'one payment per renewal');
    assert.equal(new Set(payments.map((payment) => payment.invoice_id)).size, N);

    // One charge each at the provider: its charges are the attempts' references, each once.
    const references = new Map(
      (
        await deps.db
          .selectFrom('invoice_payment_attempts')
          .select(['reference', 'invoice_id'])
          .where('kind', '=', 'charge')
          .execute()
      ).map((attempt) => [attempt.reference, attempt.invoice_id]),
    );
    assert.equal(references.size, N, 'one charge attempt per renewal, those in flight at the crash included');
    assert.equal(paystack.totalCharges, N, 'exactly N charges at Paystack');
    const charged = new Set<string>();
    for (const [reference, count] of paystack.chargesByReference) {
      assert.equal(count, 1, `charged once: ${reference}`);
      const invoice = references.get(reference);
      assert.ok(invoice, `a charge of the run's attempts: ${reference}`);
      charged.add(invoice);
    }
    assert.equal(charged.size, N, 'every renewal invoice charged, once');

    // No event twice: per topic, one per object — except the subscriptions' own updates,
    // as many for every subscription, and the clock's, once per advance. The seeding's left out.
    const perObject = new Map<string, number>();
    for (const event of await deps.db.selectFrom('events').select(['id', 'topic', 'data']).execute()) {
      if (seededEvents.has(event.id)) continue;
      // The object: the event's own, or its attempt's (invoice.payment_attempted).
      const data = (typeof event.data === 'string' ? JSON.parse(event.data) : event.data) as {
        id?: string;
        attempt?: { id: string };
      };
      const object = data.id ?? data.attempt?.id;
      assert.ok(object, `an object in ${event.topic}`);
      const at = `${event.topic} ${object}`;
      perObject.set(at, (perObject.get(at) ?? 0) + 1);
    }
    const perTopic = new Map<string, Set<number>>();
    for (const [at, count] of perObject) {
      const topic = at.split(' ')[0]!;
      perTopic.set(topic, (perTopic.get(topic) ?? new Set<number>()).add(count));
    }
    for (const [topic, counts] of perTopic) {
      if (topic.startsWith('test_clock.')) assert.deepEqual([...counts], [1], `${topic}: once, one advance`);
      else if (topic === 'subscription.updated') assert.equal(counts.size, 1, `as many ${topic} per subscription`);
      else assert.deepEqual([...counts], [1], `${topic}: once per object`);
    }
    assert.equal(perObject.get(`invoice.paid ${invoices[0]!.id}`), 1);
    t.diagnostic(
      `killed with ${paidAtKill} of ${N} renewals paid, ${verified} asked about after the restart; topics: ${[...perTopic.keys()].join(', ')}`,
    );

    async function paidRenewals(): Promise<number> {
      const row = await deps.db
        .selectFrom('invoices')
        .select((eb) => eb.fn.countAll().as('n'))
        .where('test_clock_id', '=', clock.id)
        .where('period_start', '=', NEXT_MONTH)
        .where('status', '=', 'paid')
        .executeTakeFirstOrThrow();
      return Number(row.n);
    }
  },
);
