// Races on one invoice (SPEC §9 "Bad input and races"), PostgreSQL with two instances: a
// payment and a void at once — one wins, the other is refused (409) or settles nothing, and
// an invoice is never both void and paid.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp, connectSecondInstance } from '../../../test/helpers/app.ts';
import { ON_POSTGRES } from '../../../test/helpers/database.ts';
import { createCustomer, createPlan, createSubscription } from '../../../test/helpers/factories.ts';
import { invoiceById, invoicesOf, paymentByReference, reportPayment } from '../../../test/helpers/invoice-payments.ts';
import { PROVIDER_ENV } from '../../../test/helpers/provider-events.ts';
import { AppError } from '../../http/errors.ts';
import { payInvoiceOutOfBand } from '../../billing/pay-out-of-band.ts';
import { voidInvoice } from './invoices.service.ts';

const skip = !ON_POSTGRES && 'PostgreSQL only: two instances need a second connection to one database';

/** A rejection is a 409 validation_error, or the promise fulfilled. */
function refusedOrDone(outcome: PromiseSettledResult<unknown>): 'done' | 'refused' {
  if (outcome.status === 'fulfilled') return 'done';
  const error = outcome.reason as AppError;
  assert.ok(error instanceof AppError, String(error));
  assert.equal(error.status, 409);
  assert.equal(error.code, 'validation_error');
  return 'refused';
}

test(
  'out-of-band pay against void on two instances: exactly one wins, never a paid void invoice',
  { skip },
  async (t) => {
    const app = await buildTestApp(t, { env: PROVIDER_ENV });
    const second = await connectSecondInstance(app);
    try {
      const customer = await createCustomer(app);
      const plan = await createPlan(app);
      for (let i = 0; i < 12; i++) {
        const sub = await createSubscription(app, { customerId: customer.id, planId: plan.id });
        const [invoice] = await invoicesOf(app, sub.id);
        const racers = [
          () => payInvoiceOutOfBand(app.deps.db, app.deps, invoice!.id, { paid_out_of_band: true }),
          () => voidInvoice(second, invoice!.id),
        ];
        if (i % 2 === 1) racers.reverse();
        const outcomes = (await Promise.allSettled(racers.map((run) => run()))).map(refusedOrDone);
        assert.deepEqual(outcomes.toSorted(), ['done', 'refused'], `round ${i}`);
        const after = await invoiceById(app, invoice!.id);
        const manual = await app.deps.db
          .selectFrom('payments')
          .selectAll()
          .where('subscription_id', '=', sub.id)
          .execute();
        if (after.status === 'void') {
          assert.equal(after.amount_paid, 0);
          assert.equal(after.paid_at, null);
          assert.equal(manual.length, 0, 'the refused pay recorded nothing');
        } else {
          assert.equal(after.status, 'paid');
          assert.equal(after.voided_at, null);
          assert.equal(manual.length, 1);
        }
      }
    } finally {
      await second.close();
    }
  },
);

test(
  'a provider payment against void on two instances: the payment is recorded either way and settles only an unvoided invoice',
  { skip },
  async (t) => {
    const app = await buildTestApp(t, { env: PROVIDER_ENV });
    const second = await connectSecondInstance(app);
    try {
      const customer = await createCustomer(app);
      const plan = await createPlan(app);
      for (let i = 0; i < 12; i++) {
        const sub = await createSubscription(app, { customerId: customer.id, planId: plan.id });
        const [invoice] = await invoicesOf(app, sub.id);
        const [paid, voided] = await Promise.allSettled([
          reportPayment(app, { subscriptionId: sub.id, amount: 5000, invoiceId: invoice!.id }),
          voidInvoice(second, invoice!.id),
        ]);
        assert.equal(paid.status, 'fulfilled');
        assert.equal((paid as PromiseFulfilledResult<{ status: number }>).value.status, 200);
        const voidOutcome = refusedOrDone(voided);
        const payment = await paymentByReference(
          app,
          (paid as PromiseFulfilledResult<{ reference: string }>).value.reference,
        );
        assert.equal(payment.status, 'succeeded');
        const after = await invoiceById(app, invoice!.id);
        if (voidOutcome === 'done') {
          assert.equal(after.status, 'void');
          assert.equal(after.amount_paid, 0);
          assert.equal(payment.invoice_id, null);
          assert.equal((await app.request('GET', `/api/subscriptions/${sub.id}`)).body.status, 'incomplete');
        } else {
          assert.equal(after.status, 'paid');
          assert.equal(payment.invoice_id, invoice!.id);
          assert.equal((await app.request('GET', `/api/subscriptions/${sub.id}`)).body.status, 'active');
        }
      }
    } finally {
      await second.close();
    }
  },
);
