// The operator console in a real browser (SPEC §16): headless Chromium (test/helpers/browser.ts)
// against the real app on a real port, on SQLite or PostgreSQL like every test. One browser
// for the file and one signed-in session (a browser context) shared by the subtests that only
// act through it; the sign-in, expiry and read-only subtests make their own contexts, closed
// when they end.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { TestContext } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { launchBrowser, newContext } from '../../test/helpers/browser.ts';
import { appWithFakeProviders, type FakeProviders } from '../../test/helpers/provider-apps.ts';
import type { TestApp } from '../../test/helpers/app.ts';
import { createCustomer, createSubscription } from '../../test/helpers/factories.ts';
import { breakPayments, paystackCharge, postPaystack, repairPayments } from '../../test/helpers/provider-events.ts';
import { createLoginLink, LOGIN_LINK_TTL_MS } from '../modules/console-sessions/console-sessions.service.ts';
import { Worker } from '../worker/runner.ts';
import { advanceTestClocks } from '../worker/test-clocks.jobs.ts';
import { CLOCK_AWARE_JOBS } from '../worker/jobs.ts';

type App = TestApp & FakeProviders;

/** A fresh one-time sign-in link (what `billing console-login` prints). */
async function loginLink(app: App, readOnly = false): Promise<string> {
  const link = await createLoginLink(app.deps.db, app.deps.clock, { readOnly });
  return `${app.baseUrl}/console/login/${link.token}`;
}

/** A new browser context signed in through a one-time link, on the overview; closed when `t` ends if given. */
async function signedIn(browser: Browser, app: App, readOnly = false, t?: TestContext): Promise<Page> {
  const context = await newContext(browser, t);
  const page = await context.newPage();
  await page.goto(await loginLink(app, readOnly));
  await page.waitForURL(`${app.baseUrl}/console`);
  await page.getByRole('heading', { name: 'Overview' }).waitFor();
  return page;
}

/** A succeeded Paystack payment of `amount` NGN, known to the fake provider too. */
async function paystackPayment(app: App, amount: number, customerId?: string) {
  const charge = paystackCharge({ amount, metadata: customerId ? { customer_id: customerId } : {} });
  assert.equal((await postPaystack(app, charge)).status, 200);
  app.paystack.paid(charge.data.reference, amount);
  const list = await app.request('GET', '/api/payments?limit=100');
  return list.body.data.find((p: { provider_reference: string }) => p.provider_reference === charge.data.reference);
}

/** The console's POST as a script would send it, with the cookie of `page`'s session. */
async function postAs(page: Page, app: App, path: string, form: Record<string, string>) {
  const cookies = await page.context().cookies(app.baseUrl + '/console');
  return fetch(app.baseUrl + path, {
    method: 'POST',
    redirect: 'manual',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      cookie: cookies.map((cookie) => `${cookie.name}=${cookie.value}`).join('; '),
    },
    body: new URLSearchParams(form).toString(),
  });
}

/** The CSRF token of the page's forms. */
async function csrfOf(page: Page): Promise<string> {
  return (await page.locator('input[name=_csrf]').first().getAttribute('value'))!;
}

test('the operator console in a browser', async (t) => {
  const browser = await launchBrowser(t);
  const app = await appWithFakeProviders(t, { TEST_CLOCKS: 'true' });
  // The operator's session for the subtests that do not sign in, out or time out themselves:
  // signed in once (after the expiry subtest moves the clock), back on the overview each time.
  let operator: Page | undefined;
  const operatorPage = async () => {
    operator ??= await signedIn(browser, app);
    await operator.goto(`${app.baseUrl}/console`);
    await operator.getByRole('heading', { name: 'Overview' }).waitFor();
    return operator;
  };

  await t.test(
    'a one-time link signs in once: the cookie is HttpOnly and SameSite=Strict; opened again it is refused',
    async (t) => {
      const link = await loginLink(app);
      // A HEAD (a link preview) does not use the link up.
      assert.notEqual((await fetch(link, { method: 'HEAD' })).status, 200);
      const context = await newContext(browser, t);
      const page = await context.newPage();
      await page.goto(link);
      await page.waitForURL(`${app.baseUrl}/console`);
      const [cookie] = await context.cookies(app.baseUrl + '/console');
      assert.equal(cookie?.httpOnly, true);
      assert.equal(cookie?.sameSite, 'Strict');
      assert.equal(cookie?.path, '/console');
      const other = await (await newContext(browser, t)).newPage();
      const again = await other.goto(link);
      assert.equal(again?.status(), 401);
      assert.match((await other.textContent('h1')) ?? '', /does not work/);
      // Without a session every page is the sign-in notice.
      const bare = await other.goto(`${app.baseUrl}/console/customers`);
      assert.equal(bare?.status(), 401);
    },
  );

  await t.test('an expired link (15 minutes) is refused', async (t) => {
    const link = await loginLink(app);
    app.clock.advance(LOGIN_LINK_TTL_MS);
    const page = await (await newContext(browser, t)).newPage();
    assert.equal((await page.goto(link))?.status(), 401);
  });

  await t.test('find a customer by email; a hostile name renders as text', async (t) => {
    const hostile = '<img src=x onerror=alert(1)> "Zoë" \u202e';
    const customer = await createCustomer(app, {
      email: `Find.Me.${Date.now()}@Example.com`,
      name: hostile,
      metadata: { note: '<script>alert(1)</script>' },
    });
    const page = await operatorPage();
    let dialogs = 0;
    const onDialog = () => (dialogs += 1);
    page.on('dialog', onDialog);
    t.after(() => page.off('dialog', onDialog));
    await page.getByRole('link', { name: 'Customers' }).click();
    await page.getByRole('searchbox', { name: 'Search' }).fill('find.me.');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.getByRole('link', { name: customer.id }).click();
    await page.waitForURL(`${app.baseUrl}/console/customers/${customer.id}`);
    assert.equal(await page.locator('img').count(), 0, 'the name is text, not an element');
    assert.ok((await page.textContent('h1'))!.includes(hostile));
    assert.ok((await page.textContent('main'))!.includes('<script>alert(1)</script>'));
    assert.equal(dialogs, 0);
    // A prefix that matches nobody (LIKE wildcards and the last code point are plain text) is
    // an empty page; NUL is refused 400 with the app's words, as anywhere.
    await page.goto(`${app.baseUrl}/console/customers?q=${encodeURIComponent('%_\u{10FFFF}')}&by=name`);
    assert.match((await page.textContent('main'))!, /No customer found/);
    const nul = await page.goto(`${app.baseUrl}/console/customers?q=${encodeURIComponent('a\u0000')}`);
    assert.equal(nul?.status(), 400);
    assert.match((await page.textContent('main'))!, /NUL/);
  });

  await t.test('refund part of a payment and see the pending refund', async () => {
    const payment = await paystackPayment(app, 5000);
    const page = await operatorPage();
    await page.goto(`${app.baseUrl}/console/payments/${payment.id}`);
    await page.getByRole('textbox', { name: 'Refund amount' }).fill('1200');
    await page.getByRole('button', { name: 'Refund' }).click();
    await page.getByText('Refund requested').waitFor();
    const row = page.locator('tbody tr', { hasText: 'pending' });
    assert.match((await row.textContent())!, /12\.00/);
    // A refund beyond what is left is refused with the core's message; nothing is made.
    await page.getByRole('textbox', { name: 'Refund amount' }).fill('999999');
    await page.getByRole('button', { name: 'Refund' }).click();
    assert.match((await page.textContent('main'))!, /refund/i);
    const refunds = await app.request('GET', `/api/refunds?payment_id=${payment.id}`);
    assert.equal(refunds.body.data.length, 1);
    // Both the refund and the refusal are in the audit trail.
    const sessions = await app.deps.db
      .selectFrom('console_actions')
      .select(['session_id', 'action', 'outcome'])
      .execute();
    assert.ok(sessions.some((a) => a.action === 'payment.refund' && a.outcome === 'succeeded'));
    assert.ok(sessions.some((a) => a.action === 'payment.refund' && a.outcome === 'refused'));
  });

  await t.test('void an invoice: its event carries the console session as actor', async () => {
    const subscription = await createSubscription(app);
    const invoices = await app.request('GET', `/api/invoices?subscription_id=${subscription.id}`);
    const invoice = invoices.body.data[0];
    assert.equal(invoice.status, 'open');
    const page = await operatorPage();
    await page.goto(`${app.baseUrl}/console/invoices/${invoice.id}`);
    await page.getByRole('button', { name: 'Void invoice' }).click();
    await page.getByText('Invoice voided.').waitFor();
    assert.equal(await page.getByTestId('invoice-status').textContent(), 'void');
    const events = await app.request('GET', '/api/events?topic=invoice.voided&limit=10');
    const voided = events.body.data.find((event: { data: { id: string } }) => event.data.id === invoice.id);
    assert.equal(voided.actor.type, 'console_session');
    assert.match(voided.actor.id, /^cs_/);
    // API-caused events carry no actor.
    const created = await app.request('GET', '/api/events?topic=customer.created&limit=1');
    assert.equal(created.body.data[0].actor, null);
    // The PDF link works with the session (no API key).
    const pdf = await page.request.get(`${app.baseUrl}/console/invoices/${invoice.id}/pdf`);
    assert.equal(pdf.status(), 200);
    assert.equal(pdf.headers()['content-type'], 'application/pdf');
  });

  await t.test('retry a failed provider event', async () => {
    await breakPayments(app);
    const charge = paystackCharge({ amount: 3000 });
    await postPaystack(app, charge);
    await repairPayments(app);
    const failed = await app.request('GET', '/api/provider-events?status=failed');
    const event =
      failed.body.data.find((row: { event_key: string }) => row.event_key.includes(charge.data.reference)) ??
      failed.body.data[0];
    assert.ok(event, 'a failed provider event');
    const page = await operatorPage();
    await page.goto(`${app.baseUrl}/console/provider-events?status=failed`);
    await page.getByRole('link', { name: event.id }).click();
    assert.equal(await page.getByTestId('provider-event-status').textContent(), 'failed');
    await page.getByRole('button', { name: 'Retry now' }).click();
    await page.getByText('Provider event processed again.').waitFor();
    assert.equal(await page.getByTestId('provider-event-status').textContent(), 'processed');
  });

  await t.test('advance a test clock and watch it finish', async () => {
    const created = await app.request('POST', '/api/test-clocks', {
      body: { frozen_time: '2026-03-01T00:00:00.000Z', name: 'browser' },
    });
    assert.equal(created.status, 201, created.text);
    const page = await operatorPage();
    await page.getByRole('link', { name: 'Test clocks' }).click();
    await page.getByRole('link', { name: created.body.id }).click();
    await page.getByRole('textbox', { name: 'Target time' }).fill('2026-04-01T00:00:00Z');
    await page.getByRole('button', { name: 'Advance' }).click();
    await page.getByText('Test clock advancing.').waitFor();
    assert.equal(await page.getByTestId('clock-status').textContent(), 'advancing');
    // While advancing, the page reloads itself (a meta refresh every 2 s, which the browser
    // follows by itself; reloaded here rather than waited for). The worker runs the advance; the
    // page, reloaded, shows it finished and reloads no more.
    const refresh = page.locator('meta[http-equiv="refresh"]');
    assert.equal(await refresh.getAttribute('content'), '2');
    const worker = new Worker(app.deps, [advanceTestClocks(CLOCK_AWARE_JOBS)], { error: () => {} });
    while ((await app.request('GET', `/api/test-clocks/${created.body.id}`)).body.status !== 'ready') {
      await worker.runOnce();
    }
    await page.reload();
    assert.equal(await page.getByTestId('clock-status').textContent(), 'ready');
    assert.match((await page.getByTestId('clock-time').textContent())!, /2026-04-01 00:00:00/);
    assert.equal(await refresh.count(), 0);
  });

  await t.test(
    'a read-only session sees no buttons and is refused every change, in the page and by a direct POST',
    async (t) => {
      const subscription = await createSubscription(app);
      const invoice = (await app.request('GET', `/api/invoices?subscription_id=${subscription.id}`)).body.data[0];
      const page = await signedIn(browser, app, true, t);
      assert.ok(await page.getByText('read-only').isVisible());
      await page.goto(`${app.baseUrl}/console/invoices/${invoice.id}`);
      assert.equal(await page.getByRole('button', { name: 'Void invoice' }).count(), 0);
      const csrf = await csrfOf(page);
      for (const path of [
        `/console/invoices/${invoice.id}/void`,
        `/console/invoices/${invoice.id}/mark-uncollectible`,
        `/console/invoices/${invoice.id}/pay`,
        `/console/subscriptions/${subscription.id}/cancel`,
      ]) {
        const res = await postAs(page, app, path, { _csrf: csrf });
        assert.equal(res.status, 403, path);
      }
      const after = await app.request('GET', `/api/invoices/${invoice.id}`);
      assert.equal(after.body.status, 'open', 'nothing changed');
      // Sign-out is the one POST a read-only session may make.
      const out = await postAs(page, app, '/console/sign-out', { _csrf: csrf });
      assert.equal(out.status, 200);
      assert.equal((await page.goto(`${app.baseUrl}/console`))?.status(), 401);
    },
  );

  await t.test('a POST without the CSRF token, or with a wrong one, is refused 403 and changes nothing', async () => {
    const subscription = await createSubscription(app);
    const invoice = (await app.request('GET', `/api/invoices?subscription_id=${subscription.id}`)).body.data[0];
    const page = await operatorPage();
    assert.equal((await postAs(page, app, `/console/invoices/${invoice.id}/void`, {})).status, 403);
    const wrong = (await csrfOf(page)).replace(/^./, (c) => (c === 'A' ? 'B' : 'A'));
    assert.equal((await postAs(page, app, `/console/invoices/${invoice.id}/void`, { _csrf: wrong })).status, 403);
    assert.equal((await app.request('GET', `/api/invoices/${invoice.id}`)).body.status, 'open');
    // With the token the same POST works (303 back to the invoice).
    const ok = await postAs(page, app, `/console/invoices/${invoice.id}/void`, { _csrf: await csrfOf(page) });
    assert.equal(ok.status, 303);
    assert.equal((await app.request('GET', `/api/invoices/${invoice.id}`)).body.status, 'void');
  });

  await t.test('an API key created in the console is shown once, works, and stops working when revoked', async () => {
    const page = await operatorPage();
    await page.getByRole('link', { name: 'API keys' }).click();
    await page.getByRole('textbox', { name: 'Key name' }).fill('made in the console');
    await page.getByRole('combobox', { name: 'Scope' }).selectOption('read');
    await page.getByRole('button', { name: 'Create key' }).click();
    const key = (await page.getByTestId('new-key').textContent())!.trim();
    assert.equal((await app.request('GET', '/api/customers', { key })).status, 200);
    await page.goto(`${app.baseUrl}/console/api-keys`);
    assert.equal(await page.getByTestId('new-key').count(), 0, 'shown only in the answer that made it');
    const row = page.locator('tbody tr', { hasText: 'made in the console' });
    await row.getByRole('button', { name: 'Revoke' }).click();
    await page.getByText('API key revoked.').waitFor();
    assert.equal((await app.request('GET', '/api/customers', { key })).status, 401);
  });

  await t.test('a session idle for CONSOLE_IDLE_TIMEOUT is over', async () => {
    const page = await operatorPage();
    app.clock.advance(app.deps.config.consoleIdleTimeoutMs);
    assert.equal((await page.goto(`${app.baseUrl}/console`))?.status(), 401);
  });
});
