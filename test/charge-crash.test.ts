// Exactly once across a crash (SPEC §10): a service process charging a renewal invoice is
// killed with SIGKILL after it committed the attempt and the provider charged the card, but
// before the provider's answer reached it (the fake Paystack holds the answer). A new process
// on the same database finds the attempt once its lease is over, asks Paystack (verify)
// instead of charging again, and records the payment: one charge at the provider, the
// invoice paid. Runs on the SQLite file and on a PostgreSQL database of its own.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { loadConfig } from '../src/config.ts';
import { createDeps } from '../src/deps.ts';
import { applySuccessfulPayment } from '../src/billing/subscription-payments.ts';
import { FakePaystack } from './helpers/fake-paystack.ts';
import { saveTestCard } from './helpers/payment-methods.ts';
import { DATA_ENCRYPTION_KEY, PAYSTACK_SECRET } from './helpers/provider-events.ts';
import { eventually, ownDatabaseUrl, startService } from './helpers/service.ts';

test(
  'SIGKILL between the committed charge attempt and the provider answer: one charge, the invoice paid',
  { timeout: 120_000 },
  async (t) => {
    const databaseUrl = await ownDatabaseUrl(t);
    const paystack = await FakePaystack.start(t);
    const key = `charge_crash_${randomBytes(12).toString('hex')}`;
    const env = {
      DATABASE_URL: databaseUrl,
      API_KEYS: key,
      PAYSTACK_SECRET_KEY: PAYSTACK_SECRET,
      PAYSTACK_API_URL: paystack.url,
      DATA_ENCRYPTION_KEY,
      WORKER_POLL_INTERVAL: '100ms',
      // The charge's lease is twice this (ended by the test below rather than waited out).
      PROVIDER_TIMEOUT: '1s',
      RATE_LIMIT_MAX: '0',
    };
    const first = await startService(t, env);
    const api = async (path: string, body: unknown) => {
      const res = await fetch(`${first.url}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      const text = await res.text();
      assert.equal(res.status, 201, text);
      return JSON.parse(text) as { id: string };
    };
    const customer = await api('/api/customers', { email: `crash.${randomBytes(4).toString('hex')}@example.com` });
    const plan = await api('/api/plans', { name: 'Pro', amount: 5000, currency: 'NGN', interval: 'month' });
    const subscription = await api('/api/subscriptions', { customer_id: customer.id, plan_id: plan.id });

    // The test's own connection: the first period paid, a saved card, and the period over.
    const deps = await createDeps(loadConfig({ DATABASE_URL: databaseUrl, DATA_ENCRYPTION_KEY, LOG_LEVEL: 'silent' }), {
      migrate: false,
    });
    t.after(() => deps.close());
    paystack.hold();
    await deps.db.transaction().execute(async (trx) => {
      await applySuccessfulPayment(trx, deps, subscription.id);
      await saveTestCard(trx, deps, customer.id, 'paystack');
    });
    await deps.db
      .updateTable('subscriptions')
      .set({ current_period_end: new Date(Date.now() - 1000).toISOString() })
      .where('id', '=', subscription.id)
      .execute();

    // The worker issues the renewal invoice, commits the attempt, and Paystack charges: the answer is held.
    // Killed at once: the attempt is read afterwards, so a slow test process cannot let the
    // first service's own 1 s call deadline pass in between and resolve it before the crash.
    await eventually(async () => paystack.heldCount === 1, 20_000, 'the charge reaching Paystack');
    first.child.kill('SIGKILL');
    await first.exited;
    paystack.release(); // into a dead connection
    const attempt = await deps.db
      .selectFrom('invoice_payment_attempts')
      .selectAll()
      .where('kind', '=', 'charge')
      .executeTakeFirstOrThrow();
    // Committed before the call and never answered: `unknown` if the call's deadline fired just before the kill.
    assert.ok(
      ['pending', 'unknown'].includes(attempt.status),
      `committed before the call, unresolved: ${attempt.status}`,
    );
    assert.equal(paystack.chargeCount(attempt.reference), 1);

    // The claim made the invoice due again at the lease's end, so a crash leaves it to the
    // next worker then (2 s after the claim): end the lease now instead, as that wait would.
    // The point here is what the next process does with the attempt, not how long a lease
    // lasts (src/billing/charges.test.ts runs one out on the injected clock).
    const invoice = await deps.db
      .selectFrom('invoices')
      .select('next_payment_attempt_at')
      .where('id', '=', attempt.invoice_id)
      .executeTakeFirstOrThrow();
    if (attempt.status === 'pending') {
      // The two are read from the clock one after the other: the same instant, give or take.
      const apart = Math.abs(Date.parse(invoice.next_payment_attempt_at!) - Date.parse(attempt.locked_until!));
      assert.ok(
        apart < 1000,
        `due again at the lease's end: ${invoice.next_payment_attempt_at}, ${attempt.locked_until}`,
      );
    }
    const over = new Date(Date.now() - 1).toISOString();
    await deps.db
      .updateTable('invoice_payment_attempts')
      .set({ locked_until: over })
      .where('id', '=', attempt.id)
      .where('locked_until', 'is not', null)
      .execute();
    await deps.db
      .updateTable('invoices')
      .set({ next_payment_attempt_at: over })
      .where('id', '=', attempt.invoice_id)
      .execute();

    const second = await startService(t, env);
    await eventually(
      async () => {
        const invoice = await deps.db
          .selectFrom('invoices')
          .select('status')
          .where('id', '=', attempt.invoice_id)
          .executeTakeFirstOrThrow();
        return invoice.status === 'paid';
      },
      30_000,
      `the invoice paid after the restart:\n${second.output()}`,
    );
    const after = await deps.db
      .selectFrom('invoice_payment_attempts')
      .selectAll()
      .where('invoice_id', '=', attempt.invoice_id)
      .execute();
    assert.equal(after.length, 1, 'the same attempt, resolved');
    assert.equal(after[0]!.status, 'succeeded');
    assert.equal(paystack.totalCharges, 1, 'exactly one charge at Paystack');
    assert.ok(
      paystack.calls.some((c) => c.path === `/transaction/verify/${attempt.reference}`),
      'asked Paystack first',
    );
    const payments = await deps.db
      .selectFrom('payments')
      .selectAll()
      .where('invoice_id', '=', attempt.invoice_id)
      .execute();
    assert.equal(payments.length, 1);
    assert.equal(payments[0]!.provider_reference, attempt.reference);
  },
);
