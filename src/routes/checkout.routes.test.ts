import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import { appWithFakeProviders } from '../../test/helpers/provider-apps.ts';
import { type TestApp } from '../../test/helpers/app.ts';
import { createSubscription } from '../../test/helpers/factories.ts';
import { STRIPE_API_KEY } from '../../test/helpers/fake-stripe.ts';
import { PAYSTACK_SECRET } from '../../test/helpers/provider-events.ts';
import { findPlan } from '../modules/plans/plans.service.ts';
import { lockSubscription } from '../modules/subscriptions/subscriptions.lifecycle.ts';
import { periodInvoiceInput } from '../billing/compose/input.ts';
import { composeInvoice } from '../billing/compose/pipeline.ts';
import {
  type Invoice,
  issueInvoice,
  lockInvoice,
  transitionInvoice,
  updateInvoice,
} from '../modules/invoices/invoices.lifecycle.ts';
import { listInvoiceAttempts } from '../modules/payment-attempts/payment-attempts.ts';

/** Issues the first invoice of a new subscription (plan: 5000 NGN a month), as the worker would. */
async function openInvoice(app: TestApp, plan: Record<string, unknown> = {}): Promise<Invoice> {
  const sub = await createSubscription(app, { plan: { name: 'Pro', amount: 5000, currency: 'NGN', ...plan } });
  const start = '2026-01-15T10:00:00.000Z';
  const { invoice } = await app.deps.db.transaction().execute(async (trx) => {
    const subscription = await lockSubscription(trx, sub.id);
    const found = (await findPlan(trx, subscription.plan_id))!;
    return issueInvoice(trx, app.deps, {
      customerId: subscription.customer_id,
      subscriptionId: subscription.id,
      billingReason: 'subscription_cycle',
      currency: found.currency,
      periodStart: start,
      periodEnd: '2026-02-15T10:00:00.000Z',
      dueAt: start,
      content: composeInvoice(
        periodInvoiceInput({
          reason: 'renewal',
          customerId: subscription.customer_id,
          subscriptionId: subscription.id,
          plan: found,
          periodStart: start,
          periodEnd: '2026-02-15T10:00:00.000Z',
        }),
      ),
    });
  });
  return invoice;
}

async function customerEmail(app: TestApp, id: string): Promise<string> {
  return (await app.request('GET', `/api/customers/${id}`)).body.email;
}

function checkout(app: TestApp, invoiceId: string, body: Record<string, unknown> = {}) {
  return app.request('POST', `/api/invoices/${invoiceId}/checkout`, { body });
}

test('Paystack: POST /transaction/initialize with the email, the amount remaining, currency, our reference, callback_url and metadata → its authorization_url', async (t) => {
  const app = await appWithFakeProviders(t);
  const invoice = await openInvoice(app);
  // A partial payment leaves 3000 to collect.
  await app.deps.db.transaction().execute(async (trx) => {
    await updateInvoice(trx, app.deps, await lockInvoice(trx, invoice.id), { amount_paid: 2000 });
  });

  const res = await checkout(app, invoice.id, { callback_url: 'https://app.example.com/thanks?x=1' });
  assert.equal(res.status, 201, res.text);
  assert.equal(res.body.provider, 'paystack', 'DEFAULT_PROVIDER is paystack when both are configured');
  assert.match(res.body.reference, /^pat-[0-9A-Z]{26}$/);
  assert.equal(res.body.expires_at, undefined, 'Paystack does not say when its link expires');

  assert.equal(app.paystack.calls.length, 1);
  const [call] = app.paystack.initializeCalls;
  assert.equal(call!.headers.authorization, `Bearer ${PAYSTACK_SECRET}`);
  assert.match(String(call!.headers['content-type']), /^application\/json/);
  assert.deepEqual(call!.body, {
    email: await customerEmail(app, invoice.customer_id),
    amount: 3000,
    currency: 'NGN',
    reference: res.body.reference,
    callback_url: 'https://app.example.com/thanks?x=1',
    metadata: { customer_id: invoice.customer_id, subscription_id: invoice.subscription_id, invoice_id: invoice.id },
  });
  const tx = app.paystack.transactions.get(res.body.reference)!;
  assert.equal(res.body.url, `https://checkout.paystack.com/${tx.access_code}`);

  const [attempt, ...others] = await listInvoiceAttempts(app.deps.db, invoice.id);
  assert.equal(others.length, 0);
  assert.equal(attempt!.status, 'requires_action');
  assert.equal(attempt!.kind, 'checkout');
  assert.equal(attempt!.provider, 'paystack');
  assert.equal(attempt!.reference, res.body.reference);
  assert.equal(Number(attempt!.amount), 3000);
  assert.equal(attempt!.url, res.body.url);
  assert.equal(attempt!.provider_object_id, tx.access_code);
});

test('Stripe: a Checkout Session in payment mode for the amount remaining, saving the card off-session, with the metadata on the PaymentIntent too → its url and expires_at', async (t) => {
  const app = await appWithFakeProviders(t);
  const invoice = await openInvoice(app, { currency: 'USD', amount: 1999 });
  const res = await checkout(app, invoice.id, { provider: 'stripe' });
  assert.equal(res.status, 201, res.text);

  assert.equal(app.stripe.calls.length, 1);
  const [call] = app.stripe.sessionCalls;
  assert.equal(call!.headers.authorization, `Bearer ${STRIPE_API_KEY}`);
  assert.equal(
    call!.headers['idempotency-key'],
    res.body.reference,
    'a retry of the call cannot make a second session',
  );
  const metadata = {
    customer_id: invoice.customer_id,
    subscription_id: invoice.subscription_id,
    invoice_id: invoice.id,
  };
  assert.deepEqual(call!.body, {
    mode: 'payment',
    line_items: [
      {
        quantity: '1',
        price_data: { currency: 'usd', unit_amount: '1999', product_data: { name: `Invoice ${invoice.number}` } },
      },
    ],
    client_reference_id: res.body.reference,
    success_url: invoice.hosted_invoice_url,
    cancel_url: invoice.hosted_invoice_url,
    customer_email: await customerEmail(app, invoice.customer_id),
    metadata,
    payment_intent_data: { setup_future_usage: 'off_session', metadata },
  });

  const session = [...app.stripe.sessions.values()][0]!;
  assert.deepEqual(res.body, {
    provider: 'stripe',
    url: session.url,
    reference: res.body.reference,
    expires_at: new Date((session.expires_at as number) * 1000).toISOString(),
  });
  const [attempt] = await listInvoiceAttempts(app.deps.db, invoice.id);
  assert.equal(attempt!.provider_object_id, session.id);
  assert.equal(attempt!.status, 'requires_action');
  assert.equal(attempt!.currency, 'USD');
});

test('the body is optional: no body, or an empty one with Content-Type: application/json, takes the defaults', async (t) => {
  const app = await appWithFakeProviders(t);
  const invoice = await openInvoice(app);
  const bare = await app.request('POST', `/api/invoices/${invoice.id}/checkout`);
  assert.equal(bare.status, 201, bare.text);
  const empty = await app.request('POST', `/api/invoices/${invoice.id}/checkout`, {
    rawBody: '',
    headers: { 'content-type': 'application/json' },
  });
  assert.equal(empty.status, 201, empty.text);
  assert.deepEqual(
    app.paystack.initializeCalls.map((c) => c.body.callback_url),
    [invoice.hosted_invoice_url, invoice.hosted_invoice_url],
  );
});

test('each link is a new attempt with its own reference', async (t) => {
  const app = await appWithFakeProviders(t);
  const invoice = await openInvoice(app);
  const first = await checkout(app, invoice.id);
  const second = await checkout(app, invoice.id, { provider: 'stripe' });
  const third = await checkout(app, invoice.id);
  assert.deepEqual([first.status, second.status, third.status], [201, 201, 201]);
  const references = [first, second, third].map((r) => r.body.reference);
  assert.equal(new Set(references).size, 3);
  assert.deepEqual(
    (await listInvoiceAttempts(app.deps.db, invoice.id)).map((a) => [a.reference, a.provider]),
    [
      [references[0], 'paystack'],
      [references[1], 'stripe'],
      [references[2], 'paystack'],
    ],
  );
});

test('a retry with the same Idempotency-Key returns the same link without calling the provider again', async (t) => {
  const app = await appWithFakeProviders(t);
  const invoice = await openInvoice(app);
  const send = () =>
    app.request('POST', `/api/invoices/${invoice.id}/checkout`, {
      body: { provider: 'stripe' },
      headers: { 'idempotency-key': 'checkout-once' },
    });
  const first = await send();
  const again = await send();
  assert.equal(first.status, 201);
  assert.equal(again.status, 201);
  assert.equal(again.headers.get('idempotent-replayed'), 'true');
  assert.deepEqual(again.body, first.body);
  assert.equal(app.stripe.calls.length, 1);
  assert.equal((await listInvoiceAttempts(app.deps.db, invoice.id)).length, 1);
});

test('only an open invoice gets a link: paid, void and uncollectible are 409, and no provider is called', async (t) => {
  const app = await appWithFakeProviders(t);
  for (const event of ['paid', 'void', 'mark_uncollectible'] as const) {
    const invoice = await openInvoice(app);
    await app.deps.db.transaction().execute(async (trx) => {
      const row = await lockInvoice(trx, invoice.id);
      await transitionInvoice(trx, app.deps, row, event, event === 'paid' ? { amount_paid: row.amount_due } : {});
    });
    const res = await checkout(app, invoice.id);
    assert.equal(res.status, 409, event);
    assert.equal(res.body.code, 'validation_error');
    assert.match(res.body.message, /cannot be paid in its current state/);
    assert.deepEqual(await listInvoiceAttempts(app.deps.db, invoice.id), []);
  }
  assert.equal(app.paystack.calls.length + app.stripe.calls.length, 0);
});

test('an unknown or malformed invoice id is 404', async (t) => {
  const app = await appWithFakeProviders(t);
  for (const id of ['inv_01JD3Q7Z8X9Y0A1B2C3D4E5F6G', 'nope', 'cus_01JD3Q7Z8X9Y0A1B2C3D4E5F6G']) {
    const res = await checkout(app, id);
    assert.equal(res.status, 404, id);
    assert.equal(res.body.code, 'not_found');
  }
});

test('a provider without an API key cannot collect: 422 invalid_state naming the variable', async (t) => {
  const app = await appWithFakeProviders(t, { STRIPE_API_KEY: '' });
  const invoice = await openInvoice(app);
  const res = await checkout(app, invoice.id, { provider: 'stripe' });
  assert.equal(res.status, 422);
  assert.equal(res.body.code, 'invalid_state');
  assert.match(res.body.message, /STRIPE_API_KEY is not set/);
  assert.deepEqual(await listInvoiceAttempts(app.deps.db, invoice.id), []);

  const none = await appWithFakeProviders(t, { PAYSTACK_SECRET_KEY: '', STRIPE_API_KEY: '' });
  const other = await openInvoice(none);
  const defaulted = await checkout(none, other.id);
  assert.equal(defaulted.status, 422);
  assert.match(defaulted.body.message, /PAYSTACK_SECRET_KEY is not set/);
  assert.equal(app.stripe.calls.length + none.paystack.calls.length, 0);
});

test('DEFAULT_PROVIDER: the one configured when only Stripe has a key, or the one named', async (t) => {
  const onlyStripe = await appWithFakeProviders(t, { PAYSTACK_SECRET_KEY: '' });
  const res = await checkout(onlyStripe, (await openInvoice(onlyStripe)).id);
  assert.equal(res.status, 201);
  assert.equal(res.body.provider, 'stripe');

  const named = await appWithFakeProviders(t, { DEFAULT_PROVIDER: 'stripe' });
  const chosen = await checkout(named, (await openInvoice(named)).id);
  assert.equal(chosen.body.provider, 'stripe');
  assert.equal(named.paystack.calls.length, 0);
});

test('a bad callback_url or provider is 400 and changes nothing', async (t) => {
  const app = await appWithFakeProviders(t);
  const invoice = await openInvoice(app);
  for (const body of [
    { callback_url: 'ftp://example.com/x' },
    { callback_url: 'javascript:alert(1)' },
    { callback_url: '/relative/path' },
    { callback_url: 'https://user:pw@example.com/' },
    { callback_url: `https://example.com/${'a'.repeat(2048)}` },
    { callback_url: 42 },
    { provider: 'paypal' },
    { extra: true },
  ]) {
    const res = await checkout(app, invoice.id, body);
    assert.equal(res.status, 400, JSON.stringify(body).slice(0, 80));
    assert.equal(res.body.code, 'validation_error');
  }
  const res = await checkout(app, invoice.id, { callback_url: 'ftp://example.com/x' });
  assert.deepEqual(res.body.errors, [{ name: 'callback_url', reason: res.body.message }]);
  assert.deepEqual(await listInvoiceAttempts(app.deps.db, invoice.id), []);
  assert.equal(app.paystack.calls.length, 0);
});

test('a provider that does not answer within PROVIDER_TIMEOUT: 503 internal_error, the attempt stays unknown', async (t) => {
  const app = await appWithFakeProviders(t, { PROVIDER_TIMEOUT: '300ms' });
  const invoice = await openInvoice(app);
  for (const provider of ['paystack', 'stripe'] as const) {
    app[provider].queue('hang');
    const res = await checkout(app, invoice.id, { provider });
    assert.equal(res.status, 503, res.text);
    assert.equal(res.body.code, 'internal_error');
    assert.match(res.body.message, /did not answer within 300 ms; retry later/);
    assert.equal(res.body.details.provider, provider);
    assert.equal(res.body.details.reason, 'timeout');
    const attempts = await listInvoiceAttempts(app.deps.db, invoice.id);
    const attempt = attempts.at(-1)!;
    assert.equal(attempt.reference, res.body.details.reference);
    assert.equal(attempt.status, 'unknown');
    assert.equal(attempt.failure_code, 'provider_timeout');
  }
  // The next call goes through again.
  const res = await checkout(app, invoice.id, { provider: 'stripe' });
  assert.equal(res.status, 201);
});

test('a provider 5xx is 503 (unknown); a refusal is 422 with its reason (failed); a refused key is 422 naming the variable', async (t) => {
  const app = await appWithFakeProviders(t);
  const invoice = await openInvoice(app);

  app.paystack.queue({ status: 502, body: '<html>Bad gateway</html>' });
  const down = await checkout(app, invoice.id);
  assert.equal(down.status, 503);
  assert.equal(down.body.details.reason, 'unavailable');
  assert.equal(down.body.details.provider_status, 502);

  app.stripe.queue({ status: 500, body: { error: { type: 'api_error', message: 'Something went wrong' } } });
  const stripeDown = await checkout(app, invoice.id, { provider: 'stripe' });
  assert.equal(stripeDown.status, 503);
  assert.equal(stripeDown.body.details.provider_status, 500);

  app.paystack.queue({
    status: 400,
    body: {
      status: false,
      message: 'Currency not supported by merchant',
      type: 'validation_error',
      code: 'unsupported_currency',
    },
  });
  const refused = await checkout(app, invoice.id);
  assert.equal(refused.status, 422);
  assert.equal(refused.body.code, 'invalid_state');
  assert.equal(
    refused.body.message,
    'Paystack refused to initialize the transaction: Currency not supported by merchant',
  );
  assert.equal(refused.body.details.provider_code, 'unsupported_currency');

  app.stripe.queue({
    status: 400,
    body: {
      error: { type: 'invalid_request_error', code: 'amount_too_small', message: 'Amount must be at least 50 cents' },
    },
  });
  const stripeRefused = await checkout(app, invoice.id, { provider: 'stripe' });
  assert.equal(stripeRefused.status, 422);
  assert.match(
    stripeRefused.body.message,
    /^Stripe refused to create the Checkout Session: Amount must be at least 50 cents$/,
  );

  const attempts = await listInvoiceAttempts(app.deps.db, invoice.id);
  assert.deepEqual(
    attempts.map((a) => [a.status, a.failure_code]),
    [
      ['unknown', 'provider_unavailable'],
      ['unknown', 'provider_unavailable'],
      ['failed', 'unsupported_currency'],
      ['failed', 'amount_too_small'],
    ],
  );

  const wrongKeys = await appWithFakeProviders(t, {
    PAYSTACK_SECRET_KEY: 'sk_test_wrong_paystack_key_000000000000',
    STRIPE_API_KEY: 'sk_test_wrong_stripe_key_000000000000000',
  });
  const other = await openInvoice(wrongKeys);
  const paystackKey = await checkout(wrongKeys, other.id);
  assert.equal(paystackKey.status, 422);
  assert.match(paystackKey.body.message, /^Paystack refused PAYSTACK_SECRET_KEY \(HTTP 401\)$/);
  const stripeKey = await checkout(wrongKeys, other.id, { provider: 'stripe' });
  assert.equal(stripeKey.status, 422);
  assert.match(stripeKey.body.message, /^Stripe refused STRIPE_API_KEY \(HTTP 401\)$/);
});

test('provider keys never appear in logs or responses, even when a provider echoes one back', async (t) => {
  const chunks: string[] = [];
  const logStream = new Writable({
    write(chunk, _encoding, done) {
      chunks.push(String(chunk));
      done();
    },
  });
  const app = await appWithFakeProviders(t, { PROVIDER_TIMEOUT: '300ms' }, { logStream });
  const invoice = await openInvoice(app);
  const bodies: string[] = [];
  const send = async (body: Record<string, unknown>) => bodies.push((await checkout(app, invoice.id, body)).text);

  await send({});
  await send({ provider: 'stripe' });
  app.paystack.queue({ status: 400, body: { status: false, message: `Invalid key ${PAYSTACK_SECRET} for this call` } });
  await send({});
  app.stripe.queue({
    status: 400,
    body: { error: { type: 'invalid_request_error', message: `No such key: ${STRIPE_API_KEY}` } },
  });
  await send({ provider: 'stripe' });
  app.paystack.queue('hang');
  await send({});
  app.stripe.queue({ status: 503, body: { error: { type: 'api_error', message: `down ${STRIPE_API_KEY}` } } });
  await send({ provider: 'stripe' });
  await app.app.close();

  assert.match(bodies[2]!, /Invalid key \[redacted\] for this call/, 'the provider message is kept, the key cut out');
  assert.match(bodies[3]!, /No such key: \[redacted\]/);
  const logs = chunks.join('');
  assert.match(logs, /"reqId"/);
  assert.match(logs, /did not answer within 300 ms/, 'the 503 was logged');
  const attempts = JSON.stringify(await listInvoiceAttempts(app.deps.db, invoice.id));
  for (const secret of [PAYSTACK_SECRET, STRIPE_API_KEY]) {
    for (const [where, text] of [
      ['logs', logs],
      ['responses', bodies.join('\n')],
      ['stored attempts', attempts],
    ] as const) {
      assert.ok(!text.includes(secret), `${where} contain ${secret.slice(0, 12)}…`);
    }
  }
});

test('a provider that echoes the key upper-cased or URL-encoded gets it redacted too', async (t) => {
  const app = await appWithFakeProviders(t);
  const invoice = await openInvoice(app);
  const percent = (text: string) => [...text].map((c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`).join('');
  const echoes = [
    PAYSTACK_SECRET.toUpperCase(),
    encodeURIComponent(PAYSTACK_SECRET).replace('_', '%5F'),
    percent(PAYSTACK_SECRET),
    percent(PAYSTACK_SECRET.toUpperCase()).toLowerCase(),
    percent(PAYSTACK_SECRET).replaceAll('%', '%25'),
    [...PAYSTACK_SECRET].map((c) => `&#${c.charCodeAt(0)};`).join(''),
  ];
  for (const echo of echoes) {
    app.paystack.queue({ status: 400, body: { status: false, message: `Invalid key "${echo}" for this call` } });
    const res = await checkout(app, invoice.id, {});
    assert.equal(res.status, 422, echo);
    assert.equal(
      res.body.message,
      'Paystack refused to initialize the transaction: Invalid key "[redacted]" for this call',
    );
  }
  const attempts = JSON.stringify(await listInvoiceAttempts(app.deps.db, invoice.id));
  for (const echo of echoes) assert.ok(!attempts.includes(echo), 'a stored attempt holds the echoed key');
});
