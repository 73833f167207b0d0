// The customer portal's pages over HTTP (SPEC §16): what one customer sees and does, that
// another customer's ids are 404 like ids that do not exist, CSRF, the headers. Both databases.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp, type TestApp } from '../../test/helpers/app.ts';
import { createCustomer, createPlan, createSubscription } from '../../test/helpers/factories.ts';
import { saveTestPaymentMethod } from '../../test/helpers/payment-methods.ts';
import { appWithFakeProviders } from '../../test/helpers/provider-apps.ts';
import { appWithPortalPlans, openPortal } from '../../test/helpers/portal.ts';
import { PROVIDER_ENV } from '../../test/helpers/provider-events.ts';
import { invoicesOf, reportPayment } from '../../test/helpers/invoice-payments.ts';

/**
 * A customer with a subscription, two saved cards (the second the default) and an invoice:
 * the first one, open (the subscription `incomplete`), or with `active` that one paid and the
 * subscription active.
 */
async function customerWithEverything(app: TestApp, overrides: Record<string, unknown> = {}, active = false) {
  const customer = await createCustomer(app, overrides);
  const subscription = await createSubscription(app, { customerId: customer.id });
  const [invoice] = await invoicesOf(app, subscription.id);
  if (active) {
    const paid = await reportPayment(app, {
      subscriptionId: subscription.id,
      amount: invoice!.amount_due,
      invoiceId: invoice!.id,
    });
    assert.equal(paid.status, 200);
  }
  const first = await saveTestPaymentMethod(app, customer.id, 'paystack', { last4: '1111' });
  const second = await saveTestPaymentMethod(app, customer.id, 'paystack', { last4: '2222' });
  return { customer, subscription, invoice: invoice!, methods: [first, second] };
}

test("the overview: one customer's subscriptions, invoices (page, PDF, Pay) and cards; strict headers; hostile text is text", async (t) => {
  const app = await appWithFakeProviders(t);
  const hostile = '<script>alert("x")</script>\u202e&amp;';
  const a = await customerWithEverything(app, { name: hostile });
  const active = await customerWithEverything(app, {}, true);
  const plan = await app.request('PATCH', `/api/plans/${a.subscription.plan_id}`, {
    body: { name: '<img src=x onerror=alert(1)>' },
  });
  assert.ok(plan.status === 200 || plan.status === 400);
  const portal = await openPortal(app, a.customer.id, { return_url: 'https://app.example.com/"><script>' });
  const res = await portal.get('/portal');
  assert.equal(res.status, 200);
  assert.equal(
    res.headers.get('content-security-policy'),
    "default-src 'self'; script-src 'none'; object-src 'none'; base-uri 'none'; form-action 'self' https://checkout.paystack.com https://checkout.stripe.com; frame-ancestors 'none'",
  );
  assert.equal(res.headers.get('cache-control'), 'no-store');
  assert.equal(res.headers.get('x-frame-options'), 'DENY');
  const html = res.text;
  assert.ok(!html.includes('<script'), 'no script element at all');
  assert.ok(!html.includes('<img'), 'no markup from a plan name');
  assert.ok(
    html.includes('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;\ufffd&amp;amp;') ||
      html.includes('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;\u202e&amp;amp;'),
  );
  assert.ok(html.includes('<a class="back" href="https://app.example.com/%22%3E%3Cscript%3E" rel="noreferrer">'));
  const token = new URL(a.invoice.hosted_invoice_url!).pathname;
  assert.ok(html.includes(`<a href="${token}">View</a>`));
  assert.ok(html.includes(`<a href="${token}.pdf">PDF</a>`));
  assert.ok(html.includes(`<form method="post" action="/portal/invoices/${a.invoice.id}/pay">`));
  // Incomplete (its first invoice unpaid): nothing to cancel at the period end yet.
  assert.ok(!html.includes('/cancel"'));
  const activeHome = (await (await openPortal(app, active.customer.id)).get('/portal')).text;
  assert.ok(activeHome.includes(`action="/portal/subscriptions/${active.subscription.id}/cancel"`));
  assert.ok(!activeHome.includes(a.invoice.id));
  assert.match(html, /visa •••• 1111/);
  assert.match(html, /visa •••• 2222/);
  assert.equal(
    [...html.matchAll(/name="csrf" value="([^"]+)"/g)].filter((m) => m[1] === portal.csrf).length,
    [...html.matchAll(/name="csrf"/g)].length,
  );
  // Without PORTAL_PLANS no switching is offered.
  assert.ok(!html.includes('/change'));
  // The stylesheet the page links is served by the app.
  const css = /<link rel="stylesheet" href="([^"]+)">/.exec(html)![1]!;
  const sheet = await fetch(app.baseUrl + css);
  assert.equal(sheet.status, 200);
  assert.match(sheet.headers.get('content-type')!, /^text\/css/);
  assert.match(await sheet.text(), /--ink/);
});

test('a session of customer A reads and changes nothing of customer B: every id of B is the same 404 as an unknown id', async (t) => {
  const app = await appWithFakeProviders(t);
  const a = await customerWithEverything(app, { name: 'Alice' });
  const b = await customerWithEverything(app, { name: 'Bob' }, true);
  const portal = await openPortal(app, a.customer.id);
  const home = await portal.get('/portal');
  assert.ok(!home.text.includes(b.invoice.id) && !home.text.includes(b.subscription.id) && !home.text.includes('Bob'));
  assert.ok(!home.text.includes(b.methods[0]!.id));

  const methodsOfB = async () =>
    (await app.request('GET', `/api/customers/${b.customer.id}/payment-methods`)).body.data
      .map((m: { id: string; default: boolean }) => [m.id, m.default])
      .sort();
  const before = await methodsOfB();
  const unknownPage = await portal.post('/portal/invoices/inv_01JD3Q7Z8X9Y0A1B2C3D4E5F6G/pay');
  assert.equal(unknownPage.status, 404);
  const attempts = [
    () => portal.post(`/portal/invoices/${b.invoice.id}/pay`),
    () => portal.post(`/portal/subscriptions/${b.subscription.id}/cancel`),
    () => portal.get(`/portal/subscriptions/${b.subscription.id}/change?plan_id=${a.subscription.plan_id}`),
    () => portal.post(`/portal/subscriptions/${b.subscription.id}/change`, { plan_id: a.subscription.plan_id }),
    () => portal.post(`/portal/payment-methods/${b.methods[0]!.id}/default`),
    () => portal.post(`/portal/payment-methods/${b.methods[1]!.id}/remove`),
  ];
  for (const attempt of attempts) {
    const res = await attempt();
    assert.equal(res.status, 404);
    assert.equal(res.text, unknownPage.text.replace('Page not found', 'Page not found'));
  }
  const subscription = (await app.request('GET', `/api/subscriptions/${b.subscription.id}`)).body;
  assert.equal(subscription.cancel_at_period_end, false);
  assert.deepEqual(await methodsOfB(), before);
  assert.equal(before.length, 3, 'the two saved and the card of the payment');
  assert.equal(app.paystack.initializeCalls.length, 0, 'no checkout for B’s invoice');
  // A's own actions on its ids work.
  const own = await portal.post(`/portal/payment-methods/${a.methods[0]!.id}/default`);
  assert.equal(own.status, 303);
  assert.equal(own.headers.get('location'), '/portal?done=default');
});

test('every POST needs the session’s CSRF token: missing, wrong or another session’s is 403 and changes nothing', async (t) => {
  const app = await appWithFakeProviders(t);
  const a = await customerWithEverything(app, {}, true);
  const b = await customerWithEverything(app, {}, true);
  const portal = await openPortal(app, a.customer.id);
  const other = await openPortal(app, b.customer.id);
  const again = await openPortal(app, a.customer.id);
  const path = `/portal/subscriptions/${a.subscription.id}/cancel`;
  for (const csrf of ['', 'x', other.csrf, again.csrf, `${portal.csrf}\u0000`, portal.csrf.toUpperCase()]) {
    const res = await portal.post(path, { csrf });
    assert.equal(res.status, 403, JSON.stringify(csrf));
    assert.match(res.text, /Please try again/);
  }
  // A JSON body (a script, not the form) is no form at all.
  const json = await fetch(app.baseUrl + path, {
    method: 'POST',
    headers: { cookie: portal.cookie, 'content-type': 'application/json' },
    body: JSON.stringify({ csrf: portal.csrf }),
  });
  assert.equal(json.status, 404);
  assert.equal((await app.request('GET', `/api/subscriptions/${a.subscription.id}`)).body.cancel_at_period_end, false);
  // No cookie at all: the unknown page, whatever the form says.
  const anonymous = await fetch(app.baseUrl + path, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: `csrf=${portal.csrf}`,
  });
  assert.equal(anonymous.status, 404);
});

test('cancel at period end, remove a card, make one default: through the billing core, each shown once as a notice', async (t) => {
  const app = await appWithFakeProviders(t);
  const a = await customerWithEverything(app, {}, true);
  const portal = await openPortal(app, a.customer.id);
  const cancelled = await portal.post(`/portal/subscriptions/${a.subscription.id}/cancel`);
  assert.equal(cancelled.status, 303);
  assert.equal(cancelled.headers.get('location'), '/portal?done=cancelled');
  const subscription = (await app.request('GET', `/api/subscriptions/${a.subscription.id}`)).body;
  assert.equal(subscription.cancel_at_period_end, true);
  assert.equal(subscription.status, 'active');
  const page = await portal.get('/portal?done=cancelled');
  assert.match(page.text, /Your subscription will end at the end of the current period\./);
  assert.match(page.text, /Ends on 15 February 2026/);
  assert.ok(!page.text.includes('/cancel"'), 'no second cancel button');
  const events = (await app.request('GET', '/api/events?type=subscription.updated')).body.data;
  assert.ok(events.some((e: { data: { id: string } }) => e.data.id === a.subscription.id));

  const removed = await portal.post(`/portal/payment-methods/${a.methods[1]!.id}/remove`);
  assert.equal(removed.headers.get('location'), '/portal?done=removed');
  const methods = (await app.request('GET', `/api/customers/${a.customer.id}/payment-methods`)).body.data;
  assert.ok(!methods.some((m: { id: string }) => m.id === a.methods[1]!.id));
  assert.ok(methods.some((m: { id: string }) => m.id === a.methods[0]!.id));
  // Removing it again: it is no longer the customer's live method.
  assert.equal((await portal.post(`/portal/payment-methods/${a.methods[1]!.id}/remove`)).status, 404);
});

test("Pay: the hosted page's Pay button, by a 307 that keeps the POST; it makes the checkout link", async (t) => {
  const app = await appWithFakeProviders(t);
  const a = await customerWithEverything(app, { preferred_locale: 'de' });
  const portal = await openPortal(app, a.customer.id);
  const home = await portal.get('/portal');
  assert.match(home.text, /<html lang="de">/);
  assert.match(home.text, />Bezahlen</);
  const res = await portal.post(`/portal/invoices/${a.invoice.id}/pay`);
  assert.equal(res.status, 307);
  const hosted = new URL(a.invoice.hosted_invoice_url!).pathname;
  assert.equal(res.headers.get('location'), `${hosted}/pay`);
  // What the browser does with a 307: the same POST, same origin.
  const paid = await fetch(app.baseUrl + res.headers.get('location')!, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'same-origin' },
    body: `csrf=${portal.csrf}`,
    redirect: 'manual',
  });
  assert.equal(paid.status, 303);
  assert.match(paid.headers.get('location')!, /^https:\/\/checkout\.paystack\.com\//);
  assert.equal(app.paystack.initializeCalls.length, 1);
  assert.equal(app.paystack.initializeCalls[0]!.body.amount, a.invoice.amount_remaining);
});

test('switch plan among PORTAL_PLANS: the preview first (nothing changes), then the confirm applies what it showed', async (t) => {
  const { app, plans } = await appWithPortalPlans(
    t,
    [
      { name: 'Pro', amount: 9000, currency: 'NGN' },
      { name: 'Lite', amount: 2000, currency: 'NGN' },
      { name: 'Euro', amount: 9000, currency: 'EUR' },
    ],
    PROVIDER_ENV,
  );
  const [pro, lite, euro] = plans;
  const customer = await createCustomer(app);
  const basic = await createPlan(app, { name: 'Basic', amount: 5000 });
  const subscription = await createSubscription(app, { customerId: customer.id, planId: basic.id });
  await reportPayment(app, { subscriptionId: subscription.id, amount: 5000 });
  app.clock.advance(10 * 86_400_000);
  const portal = await openPortal(app, customer.id);
  const home = await portal.get('/portal');
  assert.ok(home.text.includes(`<option value="${pro.id}">Pro (₦90.00)</option>`));
  assert.ok(home.text.includes(`<option value="${lite.id}">`));
  assert.ok(!home.text.includes(euro.id), 'another currency is not offered');

  const path = `/portal/subscriptions/${subscription.id}/change`;
  const preview = await portal.get(`${path}?plan_id=${pro.id}`);
  assert.equal(preview.status, 200);
  assert.match(preview.text, /From Basic \(₦50\.00\) to Pro \(₦90\.00\)/);
  const due = /Due now: ([^<]+)</.exec(preview.text)![1]!;
  const prorationDate = /name="proration_date" value="([^"]+)"/.exec(preview.text)![1]!;
  assert.equal((await app.request('GET', `/api/subscriptions/${subscription.id}`)).body.plan_id, basic.id);
  // Plans outside PORTAL_PLANS, the current plan, or nothing: not found.
  for (const planId of [basic.id, euro.id, 'plan_01JD3Q7Z8X9Y0A1B2C3D4E5F6G', '']) {
    assert.equal((await portal.get(`${path}?plan_id=${planId}`)).status, 404, planId);
    assert.equal((await portal.post(path, { plan_id: planId })).status, 404, planId);
  }
  const other = await createPlan(app, { name: 'Not offered', amount: 9999 });
  assert.equal((await portal.post(path, { plan_id: other.id })).status, 404);

  app.clock.advance(60_000);
  const confirmed = await portal.post(path, { plan_id: pro.id, proration_date: prorationDate });
  assert.equal(confirmed.status, 303);
  assert.equal(confirmed.headers.get('location'), '/portal?done=changed');
  assert.equal((await app.request('GET', `/api/subscriptions/${subscription.id}`)).body.plan_id, pro.id);
  const invoices = (await app.request('GET', `/api/invoices?customer_id=${customer.id}`)).body.data;
  assert.equal(invoices.length, 2, 'the first period and the change (always_invoice: an upgrade)');
  const page = await portal.get('/portal?done=changed');
  assert.ok(page.text.includes(due), `the invoice of ${due} is listed`);

  // A downgrade waits for the period end: the preview says so, the confirm schedules it.
  const downgrade = await portal.get(`${path}?plan_id=${lite.id}`);
  assert.match(downgrade.text, /The change takes effect on 15 February 2026\./);
  assert.ok(!downgrade.text.includes('proration_date'));
  const scheduled = await portal.post(path, { plan_id: lite.id });
  assert.equal(scheduled.headers.get('location'), '/portal?done=scheduled');
  const after = (await app.request('GET', `/api/subscriptions/${subscription.id}`)).body;
  assert.equal(after.plan_id, pro.id);
  assert.equal(after.pending_update.plan_id, lite.id);
  // A bad proration instant is the billing core's 400: the refused page, nothing changed.
  for (const proration_date of ['1900-01-01T00:00:00.000Z', 'garbage', '9'.repeat(400)]) {
    const bad = await portal.post(path, { plan_id: lite.id, proration_date });
    assert.equal(bad.status, 409, proration_date.slice(0, 30));
    assert.match(bad.text, /That cannot be done now/);
    assert.ok(!bad.text.includes('proration_date must'), 'no internal message');
  }
  const still = (await app.request('GET', `/api/subscriptions/${subscription.id}`)).body;
  assert.deepEqual([still.plan_id, still.pending_update.plan_id], [pro.id, lite.id]);
});

test('Add a payment method: a CSRF-checked POST answers 303 to the provider page made for the session’s customer only', async (t) => {
  const app = await appWithFakeProviders(t);
  const a = await customerWithEverything(app);
  const b = await customerWithEverything(app);
  const portal = await openPortal(app, a.customer.id);
  const home = await portal.get('/portal');
  assert.ok(home.text.includes('<form method="post" action="/portal/payment-methods/add">'));
  assert.match(home.text, />Add a payment method</);
  // A stale form adds nothing and calls no provider.
  assert.equal((await portal.post('/portal/payment-methods/add', { csrf: 'x' })).status, 403);
  assert.equal(app.paystack.initializeCalls.length, 0);
  const res = await portal.post('/portal/payment-methods/add');
  assert.equal(res.status, 303);
  assert.match(res.headers.get('location')!, /^https:\/\/checkout\.paystack\.com\//);
  assert.equal(app.paystack.initializeCalls.length, 1);
  const init = app.paystack.initializeCalls[0]!.body as Record<string, any>;
  assert.equal(init.metadata.customer_id, a.customer.id);
  assert.notEqual(init.metadata.customer_id, b.customer.id);
  assert.equal(init.metadata.purpose, 'card_verification');
  assert.equal(init.callback_url, `${app.deps.config.publicUrl}/portal`);
  assert.equal(init.email, a.customer.email);
  // Without a provider key there is no button, and the POST refuses with a page, not a 500.
  const keyless = await buildTestApp(t);
  const c = await createCustomer(keyless);
  const other = await openPortal(keyless, c.id);
  assert.ok(!(await other.get('/portal')).text.includes('/portal/payment-methods/add'));
  const refused = await other.post('/portal/payment-methods/add');
  assert.ok(refused.status >= 400 && refused.status < 500, String(refused.status));
});
