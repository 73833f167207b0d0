// GET /api/invoices/{id} lists the invoice's payment attempts (SPEC §9, §10), oldest
// first, in the PaymentAttempt shape; lists, state changes and invoice.* events do not.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createSubscription } from '../../../test/helpers/factories.ts';
import { issueTestInvoice } from '../../../test/helpers/invoices.ts';
import { appWithFakeProviders } from '../../../test/helpers/provider-apps.ts';

test('GET /api/invoices/{id} lists its attempts in order with provider, reference, status, failure and timestamps; nothing else carries them', async (t) => {
  const app = await appWithFakeProviders(t, { PROVIDER_TIMEOUT: '300ms' });
  const { paystack, stripe } = app;
  const sub = await createSubscription(app, { plan: { amount: 5000, currency: 'NGN' } });
  const invoice = await issueTestInvoice(app, sub.id);

  const empty = await app.request('GET', `/api/invoices/${invoice.id}`);
  assert.equal(empty.status, 200);
  assert.deepEqual(empty.body.payment_attempts, []);

  const checkout = (provider: string) =>
    app.request('POST', `/api/invoices/${invoice.id}/checkout`, { body: { provider } });
  const first = await checkout('paystack');
  app.clock.advance(1000);
  stripe.queue({
    status: 400,
    body: { error: { type: 'invalid_request_error', code: 'amount_too_small', message: 'Amount too small' } },
  });
  const refused = await checkout('stripe');
  app.clock.advance(1000);
  paystack.queue('hang');
  const unanswered = await checkout('paystack');
  assert.deepEqual([first.status, refused.status, unanswered.status], [201, 422, 503]);

  const res = await app.request('GET', `/api/invoices/${invoice.id}`);
  assert.equal(res.status, 200);
  const { payment_attempts: attempts, ...rest } = res.body;
  const { payment_attempts: _none, ...before } = empty.body;
  assert.deepEqual(rest, before, 'the invoice itself is unchanged by its links');
  const tx = paystack.transactions.get(first.body.reference)!;
  assert.deepEqual(attempts[0], {
    id: attempts[0].id,
    invoice_id: invoice.id,
    provider: 'paystack',
    kind: 'checkout',
    reference: first.body.reference,
    status: 'requires_action',
    amount: 5000,
    currency: 'NGN',
    provider_object_id: tx.access_code,
    url: first.body.url,
    expires_at: null,
    failure_code: null,
    failure_message: null,
    created_at: '2026-01-15T10:00:00.000Z',
    updated_at: '2026-01-15T10:00:00.000Z',
  });
  assert.match(attempts[0].id, /^pat_/);
  assert.deepEqual(
    attempts.map((a: Record<string, unknown>) => [
      a.provider,
      a.reference,
      a.status,
      a.failure_code,
      a.failure_message,
      a.created_at,
    ]),
    [
      ['paystack', first.body.reference, 'requires_action', null, null, '2026-01-15T10:00:00.000Z'],
      [
        'stripe',
        refused.body.details.reference,
        'failed',
        'amount_too_small',
        'Stripe refused to create the Checkout Session: Amount too small',
        '2026-01-15T10:00:01.000Z',
      ],
      [
        'paystack',
        unanswered.body.details.reference,
        'unknown',
        'provider_timeout',
        'Paystack did not answer within 300 ms',
        '2026-01-15T10:00:02.000Z',
      ],
    ],
  );

  // Only the single invoice carries them: not the list, not a state change, not the events.
  const list = await app.request('GET', `/api/invoices?subscription_id=${sub.id}`);
  assert.equal(list.body.data.length, 1);
  assert.equal('payment_attempts' in list.body.data[0], false);
  const voided = await app.request('POST', `/api/invoices/${invoice.id}/void`);
  assert.equal(voided.status, 200);
  assert.equal('payment_attempts' in voided.body, false);
  const events = await app.request('GET', '/api/events?topic=invoice.voided');
  assert.equal(events.body.data.length, 1);
  assert.equal('payment_attempts' in events.body.data[0].data, false);

  // The document describes it: InvoiceDetail = Invoice's fields + payment_attempts of PaymentAttempt.
  const doc = (await app.request('GET', '/openapi.json')).body;
  const detail = doc.components.schemas.InvoiceDetail;
  assert.deepEqual(detail.properties.payment_attempts.items, { $ref: '#/components/schemas/PaymentAttempt' });
  assert.deepEqual(
    Object.keys(detail.properties).filter((key) => key !== 'payment_attempts'),
    Object.keys(doc.components.schemas.Invoice.properties),
  );
  const get = doc.paths['/api/invoices/{id}'].get.responses['200'].content['application/json'].schema;
  assert.equal(get.$ref, '#/components/schemas/InvoiceDetail');
});
