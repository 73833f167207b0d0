// The customer portal in a real browser (SPEC §16): headless Chromium (test/helpers/browser.ts)
// opens a portal link, pays an invoice through the fake Paystack, cancels at period end,
// switches plan after its preview, and cannot reach another customer's invoice. Both
// databases. One browser for the file, a context (cookies) per test, closed when it ends.
// UPDATE_SCREENSHOTS=1 also writes docs/images/portal.png.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { after, before, suite, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import type { TestApp } from '../../test/helpers/app.ts';
import { launchChromium, newContext } from '../../test/helpers/browser.ts';
import { createCustomer, createPlan, createSubscription } from '../../test/helpers/factories.ts';
import { invoicesOf, reportPayment } from '../../test/helpers/invoice-payments.ts';
import { appWithPortalPlans } from '../../test/helpers/portal.ts';
import { appWithFakeProviders } from '../../test/helpers/provider-apps.ts';
import { PROVIDER_ENV } from '../../test/helpers/provider-events.ts';
import { testCertificate } from '../../test/helpers/webhook-receiver.ts';

/**
 * Paystack's checkout page, played here: an HTTPS server on 127.0.0.1 that answers every GET
 * with a page and records its URL. The browser reaches it by its real name (the hosted pages'
 * CSP lets forms go to https://checkout.paystack.com only) through a host resolver rule:
 * playwright's page.route does not see the request that follows a redirect.
 */
async function fakeCheckout(): Promise<{ server: Server; port: number; visits: string[] }> {
  const visits: string[] = [];
  const server = createServer(testCertificate(), (request, response) => {
    visits.push(`https://checkout.paystack.com${request.url}`);
    response.writeHead(200, { 'content-type': 'text/html' }).end('<h1>Paystack checkout</h1>');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port, visits };
}

/** Makes a portal link for `customerId` and opens it in `page`: the portal's overview. */
async function openInBrowser(app: TestApp, page: Page, customerId: string): Promise<void> {
  const link = await app.request('POST', `/api/customers/${customerId}/portal-sessions`, {
    body: { return_url: 'https://app.example.com/account' },
  });
  assert.equal(link.status, 201);
  await page.goto(link.body.url.replace(app.deps.config.publicUrl, app.baseUrl));
  await page.waitForURL(`${app.baseUrl}/portal`);
}

suite('the customer portal in a browser', () => {
  let browser: Browser;
  let checkout: Awaited<ReturnType<typeof fakeCheckout>>;
  before(async () => {
    checkout = await fakeCheckout();
    browser = await launchChromium([`--host-resolver-rules=MAP checkout.paystack.com 127.0.0.1:${checkout.port}`]);
  });
  after(async () => {
    await browser?.close();
    checkout?.server.close();
  });

  test('in a browser: pay an open invoice through the provider, then cancel at period end', async (t) => {
    const app = await appWithFakeProviders(t);
    const customer = await createCustomer(app, { name: 'Ada <b>Lovelace</b>' });
    const subscription = await createSubscription(app, { customerId: customer.id });
    const [invoice] = await invoicesOf(app, subscription.id);
    // The provider's checkout page is on the internet: the browser is answered here instead
    // (fakeCheckout, whose certificate is not Paystack's).
    const page = await (await newContext(browser, t, { ignoreHTTPSErrors: true })).newPage();
    const checkouts = checkout.visits;
    checkouts.length = 0;
    await openInBrowser(app, page, customer.id);
    assert.equal(await page.locator('.who bdi').textContent(), 'Ada <b>Lovelace</b>');
    const row = page.locator(`tr[id="${invoice!.id}"]`);
    assert.equal(await row.locator('.badge').textContent(), 'Open');

    await row.getByRole('button', { name: 'Pay' }).click();
    await page.waitForURL(/^https:\/\/checkout\.paystack\.com\//);
    assert.equal(checkouts.length, 1);
    assert.equal(app.paystack.initializeCalls.length, 1);
    assert.equal(app.paystack.initializeCalls[0]!.body.amount, invoice!.amount_remaining);
    // The customer pays at Paystack; Paystack reports it (signed, POST /api/notify).
    const reference = app.paystack.initializeCalls[0]!.body.reference as string;
    const paid = await reportPayment(app, {
      subscriptionId: subscription.id,
      invoiceId: invoice!.id,
      amount: invoice!.amount_remaining,
      reference,
    });
    assert.equal(paid.status, 200);

    await page.goto(`${app.baseUrl}/portal`);
    assert.equal(await row.locator('.badge').textContent(), 'Paid');
    assert.equal(await row.getByRole('button', { name: 'Pay' }).count(), 0);
    await page.getByRole('button', { name: 'Cancel at period end' }).click();
    await page.waitForURL(`${app.baseUrl}/portal?done=cancelled`);
    assert.equal(
      await page.locator('.notice').textContent(),
      'Your subscription will end at the end of the current period.',
    );
    assert.match((await page.locator(`div[id="${subscription.id}"]`).textContent())!, /Ends on 15 February 2026/);
    const after = (await app.request('GET', `/api/subscriptions/${subscription.id}`)).body;
    assert.deepEqual([after.status, after.cancel_at_period_end], ['active', true]);
    if (process.env.UPDATE_SCREENSHOTS === '1') {
      await page.setViewportSize({ width: 1000, height: 820 });
      await page.screenshot({ path: 'docs/images/portal.png', fullPage: true });
    }
  });

  test("in a browser: customer A's portal cannot open customer B's invoice or subscription", async (t) => {
    const app = await appWithFakeProviders(t);
    const a = await createCustomer(app, { name: 'Alice' });
    const b = await createCustomer(app, { name: 'Bob' });
    const subscriptionB = await createSubscription(app, { customerId: b.id });
    const [invoiceB] = await invoicesOf(app, subscriptionB.id);
    await createSubscription(app, { customerId: a.id });
    const page = await (await newContext(browser, t)).newPage();
    await openInBrowser(app, page, a.id);
    assert.equal(await page.locator(`tr[id="${invoiceB!.id}"]`).count(), 0);
    const csrf = await page.locator('input[name="csrf"]').first().inputValue();
    // A's cookie and A's CSRF token, B's ids: the same 404 page as an unknown id.
    const pay = await page.request.post(`${app.baseUrl}/portal/invoices/${invoiceB!.id}/pay`, {
      form: { csrf },
      maxRedirects: 0,
    });
    assert.equal(pay.status(), 404);
    assert.match(await pay.text(), /Page not found/);
    const cancel = await page.request.post(`${app.baseUrl}/portal/subscriptions/${subscriptionB.id}/cancel`, {
      form: { csrf },
      maxRedirects: 0,
    });
    assert.equal(cancel.status(), 404);
    const shown = await page.goto(`${app.baseUrl}/portal/subscriptions/${subscriptionB.id}/change?plan_id=x`);
    assert.equal(shown!.status(), 404);
    assert.equal(app.paystack.initializeCalls.length, 0);
    assert.equal((await app.request('GET', `/api/subscriptions/${subscriptionB.id}`)).body.cancel_at_period_end, false);
  });

  test('in a browser: switching plan shows the preview first, and only the confirm changes the plan', async (t) => {
    const { app, plans } = await appWithPortalPlans(t, [{ name: 'Pro', amount: 9000 }], PROVIDER_ENV);
    const customer = await createCustomer(app, { preferred_locale: 'fr' });
    const basic = await createPlan(app, { name: 'Basic', amount: 5000 });
    const subscription = await createSubscription(app, { customerId: customer.id, planId: basic.id });
    assert.equal((await reportPayment(app, { subscriptionId: subscription.id, amount: 5000 })).status, 200);
    app.clock.advance(10 * 86_400_000);
    const page = await (await newContext(browser, t)).newPage();
    await openInBrowser(app, page, customer.id);
    assert.equal(await page.locator('html').getAttribute('lang'), 'fr');
    await page.locator('select[name="plan_id"]').selectOption(plans[0].id);
    await page.getByRole('button', { name: 'Voir le changement' }).click();
    await page.waitForURL(new RegExp(`/portal/subscriptions/${subscription.id}/change\\?plan_id=`));
    assert.match((await page.locator('.change').textContent())!, /De Basic .* à Pro/);
    assert.match((await page.locator('.change').textContent())!, /À payer maintenant/);
    assert.equal((await app.request('GET', `/api/subscriptions/${subscription.id}`)).body.plan_id, basic.id);
    await page.getByRole('button', { name: 'Confirmer le changement' }).click();
    await page.waitForURL(`${app.baseUrl}/portal?done=changed`);
    assert.equal(await page.locator('.notice').textContent(), 'Votre formule a été changée.');
    assert.equal((await app.request('GET', `/api/subscriptions/${subscription.id}`)).body.plan_id, plans[0].id);
  });
});
