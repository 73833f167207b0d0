// The hosted page's Pay button over real HTTP (SPEC §9 "Pay button"): POST /i/{token}/pay
// makes a checkout link at the fake providers through billing/checkout.ts and answers 303
// to it, reuses a live link, and answers every refusal or failure with an HTML page.
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { type TestContext, test } from 'node:test';
import type { TestApp } from '../../../test/helpers/app.ts';
import { createSubscription } from '../../../test/helpers/factories.ts';
import type { FakePaystack } from '../../../test/helpers/fake-paystack.ts';
import { type FakeStripe, STRIPE_API_KEY } from '../../../test/helpers/fake-stripe.ts';
import { issueTestInvoice, markTestInvoicePaid } from '../../../test/helpers/invoices.ts';
import { PAYSTACK_SECRET } from '../../../test/helpers/provider-events.ts';
import { appWithFakeProviders } from '../../../test/helpers/provider-apps.ts';
import { LINK_REUSE_MARGIN_MS, UNDATED_LINK_REUSE_MS } from '../../billing/checkout.ts';
import { listInvoiceAttempts } from '../payment-attempts/payment-attempts.ts';
import { HOSTED_PAGE_CSP } from '../documents/documents.hosted-page.ts';
import { lockInvoice, transitionInvoice, updateInvoice } from './invoices.lifecycle.ts';
import { PAY_BUDGET } from '../../routes/invoices.page.routes.ts';

interface PayApp extends TestApp {
  paystack: FakePaystack;
  stripe: FakeStripe;
}

/** A test app whose providers are the two fakes (both keys set unless `env` clears one). */
async function payApp(
  t: TestContext,
  env: Record<string, string> = {},
  options: { logStream?: NodeJS.WritableStream } = {},
): Promise<PayApp> {
  return appWithFakeProviders(
    t,
    { BUSINESS_NAME: 'Acme Cloud Ltd', PUBLIC_URL: 'https://billing.example.com', ...env },
    { logStream: options.logStream },
  );
}

/** The open first invoice of a new subscription (5000 NGN unless `plan` says) and its page's path. */
async function openInvoice(app: TestApp, plan: Record<string, unknown> = {}) {
  const sub = await createSubscription(app, { plan: { name: 'Pro', amount: 5000, currency: 'NGN', ...plan } });
  const invoice = await issueTestInvoice(app, sub.id);
  assert.equal(invoice.status, 'open');
  return { invoice, path: new URL(invoice.hosted_invoice_url!).pathname };
}

interface Answer {
  status: number;
  headers: Headers;
  text: string;
}

/**
 * Presses the Pay button as a browser does: a form POST without fields, no API key, from the
 * page itself (`Sec-Fetch-Site: same-origin`, and `Origin: null` under no-referrer); the
 * redirect is not followed.
 */
async function press(app: TestApp, path: string, headers: Record<string, string> = {}, body = ''): Promise<Answer> {
  const response = await fetch(`${app.baseUrl}${path}/pay`, {
    method: 'POST',
    redirect: 'manual',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      'sec-fetch-site': 'same-origin',
      origin: 'null',
      ...headers,
    },
    body,
  });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

function assertHtml(res: Answer) {
  assert.equal(res.headers.get('content-type'), 'text/html; charset=utf-8');
  assert.equal(res.headers.get('content-security-policy'), HOSTED_PAGE_CSP);
  assert.equal(res.headers.get('cache-control'), 'no-store');
  assert.match(res.text, /^<!doctype html>\n/);
  assert.doesNotMatch(res.text, /"code"|internal_error|validation_error|at .*\.ts/);
}

async function setAmountPaid(app: TestApp, id: string, amountPaid: number) {
  await app.deps.db.transaction().execute(async (trx) => {
    await updateInvoice(trx, app.deps, await lockInvoice(trx, id), { amount_paid: amountPaid });
  });
}

test('the page shows the Pay button only for an open invoice and only when DEFAULT_PROVIDER can collect', async (t) => {
  const app = await payApp(t);
  const { invoice, path } = await openInvoice(app);
  const page = await app.request('GET', path, { key: null });
  assert.equal(page.status, 200);
  assert.match(
    page.text,
    new RegExp(`<form class="pay" method="post" action="${path}/pay">\\n<button type="submit">Pay ₦50\\.00</button>`),
  );
  assert.match(page.text, /Secure payment with Paystack/);

  const stripeFirst = await payApp(t, { DEFAULT_PROVIDER: 'stripe' });
  const other = await openInvoice(stripeFirst);
  assert.match((await stripeFirst.request('GET', other.path, { key: null })).text, /Secure payment with Stripe/);

  await markTestInvoicePaid(app, invoice.id);
  assert.doesNotMatch((await app.request('GET', path, { key: null })).text, /<form/);

  const noKeys = await payApp(t, { PAYSTACK_SECRET_KEY: '', STRIPE_API_KEY: '' });
  const unpaid = await openInvoice(noKeys);
  const res = await noKeys.request('GET', unpaid.path, { key: null });
  assert.equal(res.status, 200);
  assert.doesNotMatch(res.text, /<form|Pay /);
  // Pressing anyway: the page again (409), no provider called.
  const pressed = await press(noKeys, unpaid.path);
  assert.equal(pressed.status, 409);
  assertHtml(pressed);
  assert.match(pressed.text, /<main class="sheet status-open">/);
  assert.equal(noKeys.paystack.calls.length + noKeys.stripe.calls.length, 0);
});

test('Pay makes a checkout link exactly as the API does and answers 303 See Other to the provider’s page', async (t) => {
  const app = await payApp(t);
  const { invoice, path } = await openInvoice(app);
  const res = await press(app, path);
  assert.equal(res.status, 303, res.text);
  const [call, ...more] = app.paystack.initializeCalls;
  assert.equal(more.length, 0);
  const tx = app.paystack.transactions.get(call!.body.reference as string)!;
  assert.equal(res.headers.get('location'), `https://checkout.paystack.com/${tx.access_code}`);
  assert.equal(res.headers.get('cache-control'), 'no-store');
  assert.equal(res.text, '');
  assert.deepEqual(call!.body, {
    email: call!.body.email,
    amount: 5000,
    currency: 'NGN',
    reference: call!.body.reference,
    callback_url: invoice.hosted_invoice_url,
    metadata: { customer_id: invoice.customer_id, subscription_id: invoice.subscription_id, invoice_id: invoice.id },
  });
  const [attempt] = await listInvoiceAttempts(app.deps.db, invoice.id);
  assert.equal(attempt!.status, 'requires_action');
  assert.equal(attempt!.kind, 'checkout');
  assert.equal(attempt!.url, res.headers.get('location'));

  // Stripe as DEFAULT_PROVIDER: a Checkout Session, 303 to its url.
  const stripeApp = await payApp(t, { DEFAULT_PROVIDER: 'stripe' });
  const other = await openInvoice(stripeApp, { currency: 'USD', amount: 1999 });
  const viaStripe = await press(stripeApp, other.path);
  assert.equal(viaStripe.status, 303);
  const session = [...stripeApp.stripe.sessions.values()][0]!;
  assert.equal(viaStripe.headers.get('location'), session.url);
  assert.equal(stripeApp.stripe.sessionCalls[0]!.body.success_url, other.invoice.hosted_invoice_url);
});

test('a live link of the same amount is handed out again; an expired one, or another amount, makes a new one', async (t) => {
  const app = await payApp(t);
  const { invoice, path } = await openInvoice(app);
  const first = await press(app, path);
  const again = await press(app, path);
  assert.equal(again.status, 303);
  assert.equal(again.headers.get('location'), first.headers.get('location'));
  assert.equal(app.paystack.calls.length, 1, 'no new provider transaction');

  // A Paystack link carries no expiry: reused for UNDATED_LINK_REUSE_MS after it was made.
  app.clock.advance(UNDATED_LINK_REUSE_MS - 1);
  assert.equal((await press(app, path)).headers.get('location'), first.headers.get('location'));
  app.clock.advance(1);
  const later = await press(app, path);
  assert.notEqual(later.headers.get('location'), first.headers.get('location'));
  assert.equal(app.paystack.calls.length, 2);

  // A partial payment changes what is owed: the old link asks for too much.
  await setAmountPaid(app, invoice.id, 2000);
  const partial = await press(app, path);
  assert.notEqual(partial.headers.get('location'), later.headers.get('location'));
  assert.equal(app.paystack.initializeCalls[2]!.body.amount, 3000);
  // A failed or unanswered attempt is never handed out.
  app.paystack.queue({ status: 502, body: 'down' });
  await setAmountPaid(app, invoice.id, 2500);
  assert.equal((await press(app, path)).status, 503);
  const retried = await press(app, path);
  assert.equal(retried.status, 303);
  assert.equal(app.paystack.calls.length, 5);
  assert.deepEqual(
    (await listInvoiceAttempts(app.deps.db, invoice.id)).map((a) => [a.status, Number(a.amount)]),
    [
      ['requires_action', 5000],
      ['requires_action', 5000],
      ['requires_action', 3000],
      ['unknown', 2500],
      ['requires_action', 2500],
    ],
  );

  // A link with an expiry (Stripe) is reused until LINK_REUSE_MARGIN_MS before it.
  const stripeApp = await payApp(t, { DEFAULT_PROVIDER: 'stripe' });
  const other = await openInvoice(stripeApp);
  const session = await press(stripeApp, other.path);
  const [attempt] = await listInvoiceAttempts(stripeApp.deps.db, other.invoice.id);
  const reuseEnds = Date.parse(attempt!.expires_at!) - LINK_REUSE_MARGIN_MS;
  stripeApp.clock.set(new Date(reuseEnds - 1));
  assert.equal((await press(stripeApp, other.path)).headers.get('location'), session.headers.get('location'));
  stripeApp.clock.set(new Date(reuseEnds));
  assert.notEqual((await press(stripeApp, other.path)).headers.get('location'), session.headers.get('location'));
  assert.equal(stripeApp.stripe.sessionCalls.length, 2);
});

test('an invoice that is no longer open: the page again with its state, 409, and no provider call', async (t) => {
  const app = await payApp(t);
  for (const event of ['paid', 'void', 'mark_uncollectible'] as const) {
    const { invoice, path } = await openInvoice(app);
    await app.deps.db.transaction().execute(async (trx) => {
      const row = await lockInvoice(trx, invoice.id);
      await transitionInvoice(trx, app.deps, row, event, event === 'paid' ? { amount_paid: row.amount_due } : {});
    });
    const res = await press(app, path);
    assert.equal(res.status, 409, event);
    assertHtml(res);
    assert.match(res.text, /<div class="stamp" aria-hidden="true">(Paid|Void|Uncollectible)<\/div>/);
    assert.doesNotMatch(res.text, /<form/);
  }
  assert.equal(app.paystack.calls.length, 0);
});

test('no usable answer from the provider, or a refusal: an HTML 503 "try again" page linking back, logged without secrets', async (t) => {
  let logs = '';
  const logStream = new Writable({
    write(chunk, _encoding, done) {
      logs += String(chunk);
      done();
    },
  });
  const app = await payApp(t, { PROVIDER_TIMEOUT: '300ms' }, { logStream });
  const { invoice, path } = await openInvoice(app);
  app.paystack.queue(
    'hang',
    { status: 500, body: { status: false, message: `boom ${PAYSTACK_SECRET}` } },
    { status: 400, body: { status: false, message: 'Currency not supported by merchant' } },
  );
  for (const expected of ['unknown', 'unknown', 'failed']) {
    const res = await press(app, path);
    assert.equal(res.status, 503);
    assertHtml(res);
    assert.match(res.text, /Payment not started/);
    assert.match(res.text, /try again in a few minutes/);
    assert.ok(res.text.includes(`<a class="back" href="${path}">Back to the invoice</a>`));
    assert.ok(!res.text.includes(PAYSTACK_SECRET));
    assert.equal((await listInvoiceAttempts(app.deps.db, invoice.id)).at(-1)!.status, expected);
  }
  // Then the provider answers again.
  assert.equal((await press(app, path)).status, 303);
  await app.app.close();
  assert.match(logs, /pay button: no checkout link/);
  assert.match(logs, /did not answer within 300 ms/);
  assert.ok(!logs.includes(PAYSTACK_SECRET) && !logs.includes(STRIPE_API_KEY));
});

test('a checkout URL outside the CSP’s form-action origins gets a page with a link instead of a blocked redirect', async (t) => {
  const app = await payApp(t);
  const { path } = await openInvoice(app);
  app.paystack.queue({
    status: 200,
    body: {
      status: true,
      message: 'Authorization URL created',
      data: { authorization_url: 'https://pay.example.net/abc', access_code: 'abc', reference: 'x' },
    },
  });
  const res = await press(app, path);
  assert.equal(res.status, 200);
  assertHtml(res);
  assert.match(
    res.text,
    /<a class="back" href="https:\/\/pay\.example\.net\/abc" rel="noreferrer">Continue to Paystack<\/a>/,
  );
});

test('an unknown or malformed token is the HTML 404 page; another site’s form only leads to the invoice page', async (t) => {
  const app = await payApp(t);
  const { invoice, path } = await openInvoice(app);
  for (const candidate of [`/i/${'A'.repeat(43)}`, '/i/short', '/i/%zz', `${path}x`]) {
    const res = await press(app, candidate);
    assert.equal(res.status, 404, candidate);
    assertHtml(res);
    assert.match(res.text, /Invoice not found/);
  }
  // A cross-site (or same-site) POST makes nothing: 303 to the page, where the customer decides.
  for (const site of ['cross-site', 'same-site']) {
    const res = await press(app, path, { 'sec-fetch-site': site, origin: 'https://evil.example' });
    assert.equal(res.status, 303, site);
    assert.equal(res.headers.get('location'), path);
  }
  // A body type a form does not send is a 404 page too, never JSON — JSON included, empty or
  // not: only the button's form post (or no body at all) makes a link.
  for (const [type, body] of [
    ['text/xml', ''],
    ['application/json', '{}'],
    ['application/json', ''],
    ['application/json; charset=utf-8', '{"provider":"stripe"}'],
    ['text/plain', 'pay'],
  ]) {
    const odd = await press(app, path, { 'content-type': type! }, body);
    assert.equal(odd.status, 404, `${type} ${body}`);
    assertHtml(odd);
  }
  assert.equal(app.paystack.calls.length + app.stripe.calls.length, 0);
  assert.equal((await listInvoiceAttempts(app.deps.db, invoice.id)).length, 0, 'no attempt either');
  // Without Sec-Fetch-Site (curl, older browsers) the token alone is enough.
  const plain = await fetch(`${app.baseUrl}${path}/pay`, { method: 'POST', redirect: 'manual' });
  assert.equal(plain.status, 303);
  assert.match(plain.headers.get('location')!, /^https:\/\/checkout\.paystack\.com\//);
});

test('Pay is rate limited per invoice token (on top of the per-IP budget); the 429 is an HTML page', async (t) => {
  const app = await payApp(t, { RATE_LIMIT_MAX: '6', RATE_LIMIT_WINDOW: '1h' });
  const { path } = await openInvoice(app);
  const other = await openInvoice(app);
  for (let i = 0; i < PAY_BUDGET; i += 1) assert.equal((await press(app, path)).status, 303);
  const res = await press(app, path);
  assert.equal(res.status, 429);
  assertHtml(res);
  assert.match(res.text, /Too many requests/);
  assert.ok(Number(res.headers.get('retry-after')) >= 1);
  assert.equal(app.paystack.calls.length, 1, 'every press reused the first link');
  // Another invoice's button still works, and so does the page.
  assert.equal((await press(app, other.path)).status, 303);
  assert.equal((await app.request('GET', path, { key: null })).status, 200);
});

/** Resolves once `fake` has received `count` calls (its answers may be held back). */
async function callsReach(fake: FakePaystack, count: number): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (fake.calls.length < count) {
    if (Date.now() > deadline) throw new Error(`the fake received ${fake.calls.length} calls, not ${count}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

test('presses at the same instant make one attempt and one link, which every press is sent to', async (t) => {
  const app = await payApp(t);
  const { invoice, path } = await openInvoice(app);
  // The provider takes a while: every press arrives while the first one's call runs.
  app.paystack.latencyMs = 300;
  const answers = await Promise.all(Array.from({ length: 5 }, () => press(app, path)));
  for (const res of answers) assert.equal(res.status, 303, res.text);
  const locations = new Set(answers.map((res) => res.headers.get('location')));
  assert.equal(locations.size, 1, 'one link for every press');
  assert.match([...locations][0]!, /^https:\/\/checkout\.paystack\.com\//);
  assert.equal(app.paystack.calls.length, 1, 'one provider call');
  const attempts = await listInvoiceAttempts(app.deps.db, invoice.id);
  assert.equal(attempts.length, 1, 'one attempt');
  assert.equal(attempts[0]!.status, 'requires_action');
  assert.equal(attempts[0]!.locked_until, null, 'the press gave its lease back');
});

test('a press waiting for another press gets its outcome: the 503 page when it got no link; the next press tries again', async (t) => {
  const app = await payApp(t);
  const { invoice, path } = await openInvoice(app);
  app.paystack.queue({ status: 400, body: { status: false, message: 'Currency not supported by merchant' } });
  app.paystack.hold();
  const first = press(app, path);
  await callsReach(app.paystack, 1);
  const second = press(app, path);
  await new Promise((resolve) => setTimeout(resolve, 200));
  assert.equal(app.paystack.calls.length, 1, 'the second press waits instead of calling the provider');
  app.paystack.release();
  for (const res of await Promise.all([first, second])) {
    assert.equal(res.status, 503);
    assertHtml(res);
    assert.match(res.text, /Payment not started/);
  }
  const third = await press(app, path);
  assert.equal(third.status, 303);
  assert.equal(app.paystack.calls.length, 2);
  assert.deepEqual(
    (await listInvoiceAttempts(app.deps.db, invoice.id)).map((a) => a.status),
    ['failed', 'requires_action'],
  );
});

test('a press whose lease ran out (its process died mid-call) no longer holds the others back', async (t) => {
  const app = await payApp(t);
  const { invoice, path } = await openInvoice(app);
  app.paystack.hold();
  const stuck = press(app, path);
  await callsReach(app.paystack, 1);
  // PROVIDER_TIMEOUT (30 s) and the margin have passed on the clock the lease is read with.
  app.clock.advance(36_000);
  const next = press(app, path);
  await callsReach(app.paystack, 2);
  app.paystack.release();
  assert.equal((await next).status, 303);
  assert.equal((await stuck).status, 303);
  assert.equal(app.paystack.calls.length, 2, 'the second press made its own link');
  assert.equal((await listInvoiceAttempts(app.deps.db, invoice.id)).length, 2);
});
