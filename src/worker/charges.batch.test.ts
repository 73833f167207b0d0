// A batch of charge answers recorded together (billing/charges.batch.ts, through
// recordChargeResults) leaves the same ledger as the same answers recorded one by one
// (recordChargeResult): the same payments, attempts, invoices, subscriptions, dunning cases
// and events, in the same order per customer — for the common case the batch records itself
// and for every other answer it hands to the one-by-one path, mixed in one batch. Twin
// customers (A recorded in the batch, B one by one) get the same answer; their rows are
// compared with ids, references, numbers and tokens replaced by their order of appearance.
// Both databases.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { appWithFakeProviders } from '../../test/helpers/provider-apps.ts';
import { createSubscription } from '../../test/helpers/factories.ts';
import { saveTestPaymentMethod } from '../../test/helpers/payment-methods.ts';
import { applyFailedPayment, applySuccessfulPayment } from '../billing/subscription-payments.ts';
import {
  type ChargeResult,
  type ClaimedCharge,
  claimCharges,
  recordChargeResult,
  recordChargeResults,
} from '../billing/charges.ts';
import { recordPaymentEvent } from '../billing/payment-reports.ts';
import { withHeldReports } from '../inbox/inbox.processing.ts';
import type { ProviderName } from '../shared/provider-names.ts';
import { issueRenewalInvoices } from './subscriptions.jobs.ts';

/** What a twin pair's charge is answered, and what happened to its customer before. */
type Variant =
  | 'success'
  | 'success-stripe'
  | 'recovers-case'
  | 'partial'
  | 'surplus'
  | 'declined'
  | 'unknown'
  | 'requires-action'
  | 'webhook-first'
  | 'other-currency'
  | 'stale-success';

const VARIANTS: Variant[] = [
  'success',
  'success-stripe',
  'recovers-case',
  'partial',
  'surplus',
  'declined',
  'unknown',
  'requires-action',
  'webhook-first',
  'other-currency',
  'stale-success',
  'success',
];

function answer(variant: Variant, charge: ClaimedCharge, twin: 'A' | 'B'): ChargeResult {
  const { attempt } = charge;
  const amount = Number(attempt.amount);
  const reference = attempt.provider === 'stripe' ? `pi_${twin}${attempt.id.slice(4)}` : attempt.reference;
  const succeeded = (paid: number, currency = attempt.currency): ChargeResult => ({
    kind: 'succeeded',
    reference,
    providerObjectId: attempt.provider === 'stripe' ? reference : String(amount),
    amount: paid,
    currency,
  });
  switch (variant) {
    case 'partial':
      return succeeded(amount - 100);
    case 'surplus':
      return succeeded(amount + 100);
    case 'other-currency':
      return succeeded(amount, 'GHS');
    case 'declined':
      return { kind: 'declined', reference, providerObjectId: '77', code: 'insufficient_funds', message: 'Declined' };
    case 'unknown':
      return { kind: 'unknown', providerObjectId: null, code: 'provider_timeout', message: 'no answer' };
    case 'requires-action':
      return {
        kind: 'requires_action',
        providerObjectId: 'acc_1',
        url: 'https://checkout.example/acc_1',
        code: 'authentication_required',
        message: 'The customer must authenticate the payment',
      };
    default:
      return succeeded(amount);
  }
}

test('a batch of charge answers leaves the ledger the one-by-one path leaves, answer for answer', async (t) => {
  const app = await appWithFakeProviders(t);
  const deps = withHeldReports(app.deps);
  const twins: { variant: Variant; customers: Record<'A' | 'B', string> }[] = [];
  for (const variant of VARIANTS) {
    const provider: ProviderName = variant === 'success-stripe' ? 'stripe' : 'paystack';
    const pair = { variant, customers: { A: '', B: '' } };
    for (const twin of ['A', 'B'] as const) {
      const created = await createSubscription(app, {
        plan: { currency: provider === 'stripe' ? 'USD' : 'NGN', amount: 5000 },
      });
      const sub = await app.deps.db.transaction().execute((trx) => applySuccessfulPayment(trx, app.deps, created.id));
      await saveTestPaymentMethod(app, sub.customer_id, provider);
      pair.customers[twin] = sub.customer_id;
    }
    twins.push(pair);
  }
  const first = await app.deps.db.selectFrom('subscriptions').select('current_period_end').executeTakeFirstOrThrow();
  app.clock.set(new Date(first.current_period_end!));
  while ((await issueRenewalInvoices.run(app.deps)) > 0);

  const invoiceOf = async (customerId: string) =>
    app.deps.db
      .selectFrom('invoices')
      .selectAll()
      .where('customer_id', '=', customerId)
      .where('status', '=', 'open')
      .executeTakeFirstOrThrow();
  // What happened before the answers: a failed payment (a dunning case chasing the invoice),
  // a newer failure (the success is stale), the provider's webhook recorded first.
  for (const { variant, customers } of twins) {
    for (const customerId of Object.values(customers)) {
      const invoice = await invoiceOf(customerId);
      if (variant === 'recovers-case') {
        await app.deps.db.transaction().execute((trx) =>
          applyFailedPayment(trx, app.deps, invoice.subscription_id!, {
            paymentId: null,
            amount: Number(invoice.amount_due),
            currency: invoice.currency,
            invoiceId: invoice.id,
          }),
        );
      }
      if (variant === 'stale-success') {
        await app.deps.db
          .updateTable('subscriptions')
          .set({ last_payment_failed_at: '2099-01-01T00:00:00.000Z' })
          .where('id', '=', invoice.subscription_id!)
          .execute();
      }
    }
  }

  const { claimed } = await claimCharges(app.deps, 'batch-test', 100);
  assert.equal(claimed.length, VARIANTS.length * 2, 'every renewal claimed');
  const batch: { charge: ClaimedCharge; result: ChargeResult }[] = [];
  const oneByOne: { charge: ClaimedCharge; result: ChargeResult }[] = [];
  for (const { variant, customers } of twins) {
    for (const twin of ['A', 'B'] as const) {
      const charge = claimed.find((c) => c.invoice.customer_id === customers[twin])!;
      const result = answer(variant, charge, twin);
      if (variant === 'webhook-first' && result.kind === 'succeeded') {
        await app.deps.db.transaction().execute((trx) =>
          recordPaymentEvent(trx, deps, charge.attempt.provider, {
            kind: 'payment_succeeded',
            payment: {
              reference: result.reference,
              amount: result.amount,
              currency: result.currency,
              email: null,
              name: null,
              metadata: {
                customer_id: charge.invoice.customer_id,
                subscription_id: charge.invoice.subscription_id!,
                invoice_id: charge.invoice.id,
                payment_attempt_id: charge.attempt.id,
              },
              subscriptionReference: null,
              failureReason: null,
              occurredAt: app.clock.now().toISOString(),
            },
          }),
        );
      }
      (twin === 'A' ? batch : oneByOne).push({ charge, result });
    }
  }
  await recordChargeResults(deps, batch);
  for (const { charge, result } of oneByOne) await recordChargeResult(deps, charge, result);

  for (const { variant, customers } of twins) {
    const [a, b] = [await ledgerOf(app.deps.db, customers.A), await ledgerOf(app.deps.db, customers.B)];
    assert.deepEqual(normalized(a), normalized(b), `${variant}: the batch's ledger is the one-by-one path's`);
    if (variant === 'success' || variant === 'recovers-case') {
      assert.equal(a.invoices[0]?.status, 'paid', `${variant}: paid`);
      assert.equal(a.payments.length, 1, `${variant}: one payment`);
    }
  }
});

type Db = Awaited<ReturnType<typeof appWithFakeProviders>>['deps']['db'];

/** Every row of `customerId` the charges touch, and its events in order. */
async function ledgerOf(db: Db, customerId: string) {
  const invoices = await db
    .selectFrom('invoices')
    .selectAll()
    .where('customer_id', '=', customerId)
    .orderBy('id')
    .execute();
  const attempts = await db
    .selectFrom('invoice_payment_attempts')
    .selectAll()
    .where(
      'invoice_id',
      'in',
      invoices.map((row) => row.id),
    )
    .orderBy('id')
    .execute();
  return {
    invoices,
    attempts,
    payments: await db.selectFrom('payments').selectAll().where('customer_id', '=', customerId).orderBy('id').execute(),
    subscriptions: await db
      .selectFrom('subscriptions')
      .selectAll()
      .where('customer_id', '=', customerId)
      .orderBy('id')
      .execute(),
    cases: await db
      .selectFrom('dunning_cases')
      .selectAll()
      .where('customer_id', '=', customerId)
      .orderBy('id')
      .execute(),
    balance: await db
      .selectFrom('customer_balance_transactions')
      .selectAll()
      .where('customer_id', '=', customerId)
      .orderBy('id')
      .execute(),
    events: (
      await db
        .selectFrom('events')
        .select(['topic', 'data', 'created_at', 'customer_id'])
        .where('customer_id', '=', customerId)
        .orderBy('id')
        .execute()
    ).map((row) => ({ ...row, data: JSON.parse(row.data) as unknown })),
  };
}

/**
 * `ledger` as JSON with every id, our references, the twin's Stripe ids, invoice numbers,
 * hosted tokens and emails replaced by their order of first appearance: twins compare equal
 * exactly when their rows and events match.
 */
function normalized(ledger: unknown): unknown {
  const seen = new Map<string, string>();
  const text = JSON.stringify(ledger, (_key, value: unknown) => (typeof value === 'bigint' ? Number(value) : value));
  const replaced = text.replace(
    /(?<![\w.@-])(?:[a-z]{2,6}_[0-9A-Z]{26}|pat-[0-9A-Z]{26}|pi_[AB][0-9A-Z]{26}|[A-Z]+-\d{6}|customer\d+\.\d+@example\.com|[A-Za-z0-9_-]{43})(?![\w.@-])/g,
    (match) => {
      if (!seen.has(match)) seen.set(match, `<${seen.size}>`);
      return seen.get(match)!;
    },
  );
  return JSON.parse(replaced);
}
