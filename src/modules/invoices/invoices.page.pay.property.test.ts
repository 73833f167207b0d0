// Property (both databases): whatever the order of Pay presses, clock moves, partial payments
// (12 of at most 400 each: the invoice stays open) and provider failures, a press hands out the live link of the amount still owed when there
// is one (made less than UNDATED_LINK_REUSE_MS ago at Paystack) and asks the provider for a
// new one otherwise — never a link for another amount, never an expired or failed one.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { buildTestApp } from '../../../test/helpers/app.ts';
import { createSubscription } from '../../../test/helpers/factories.ts';
import { FakePaystack } from '../../../test/helpers/fake-paystack.ts';
import { issueTestInvoice } from '../../../test/helpers/invoices.ts';
import { PAYSTACK_SECRET } from '../../../test/helpers/provider-events.ts';
import { UNDATED_LINK_REUSE_MS } from '../../billing/checkout.ts';
import { lockInvoice, updateInvoice } from './invoices.lifecycle.ts';

type Step =
  | { kind: 'press' }
  | { kind: 'fail' } // the provider answers 502 to the next press
  | { kind: 'advance'; ms: number }
  | { kind: 'pay'; amount: number }; // a partial payment of `amount` more

const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 5, arbitrary: fc.constant({ kind: 'press' } as const) },
  { weight: 1, arbitrary: fc.constant({ kind: 'fail' } as const) },
  {
    weight: 2,
    arbitrary: fc
      .constantFrom(1, 60_000, UNDATED_LINK_REUSE_MS - 1, UNDATED_LINK_REUSE_MS, UNDATED_LINK_REUSE_MS / 2)
      .map((ms) => ({ kind: 'advance', ms }) as const),
  },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 400 }).map((amount) => ({ kind: 'pay', amount }) as const) },
);

test('property: a press reuses exactly the live link of the amount owed, else makes one', async (t) => {
  const paystack = await FakePaystack.start(t);
  await fc.assert(
    fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 12 }), async (steps) => {
      {
        // Each run's app is closed when the test ends.
        const app = await buildTestApp(t, {
          env: { PAYSTACK_SECRET_KEY: PAYSTACK_SECRET, PAYSTACK_API_URL: paystack.url },
        });
        const sub = await createSubscription(app, { plan: { amount: 5000, currency: 'NGN' } });
        const invoice = await issueTestInvoice(app, sub.id);
        const path = `${new URL(invoice.hosted_invoice_url!).pathname}/pay`;
        // The model: the link a press may hand out again, and what is owed.
        let live: { url: string; madeAt: number; amount: number } | undefined;
        let paid = 0;
        let failNext = false;
        for (const s of steps) {
          if (s.kind === 'advance') app.clock.advance(s.ms);
          if (s.kind === 'fail') failNext = true;
          if (s.kind === 'pay') {
            paid += s.amount;
            await app.deps.db.transaction().execute(async (trx) => {
              await updateInvoice(trx, app.deps, await lockInvoice(trx, invoice.id), { amount_paid: paid });
            });
          }
          if (s.kind !== 'press') continue;
          const now = app.clock.now().getTime();
          const owed = 5000 - paid;
          const reusable = live && live.amount === owed && now - live.madeAt < UNDATED_LINK_REUSE_MS;
          const calls = paystack.calls.length;
          if (failNext && !reusable) paystack.queue({ status: 502, body: 'down' });
          const res = await fetch(app.baseUrl + path, { method: 'POST', redirect: 'manual' });
          await res.arrayBuffer();
          if (reusable) {
            assert.equal(res.status, 303);
            assert.equal(res.headers.get('location'), live!.url);
            assert.equal(paystack.calls.length, calls, 'no provider call');
            continue;
          }
          assert.equal(paystack.calls.length, calls + 1, 'a new provider call');
          const sent = paystack.calls.at(-1)!.body;
          assert.equal(sent.amount, owed);
          if (failNext) {
            failNext = false;
            assert.equal(res.status, 503);
            continue;
          }
          assert.equal(res.status, 303);
          live = { url: res.headers.get('location')!, madeAt: now, amount: owed };
        }
      }
    }),
    { numRuns: 10 },
  );
});
