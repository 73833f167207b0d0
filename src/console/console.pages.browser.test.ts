// One browser pass over the console's newer pages (SPEC §16): headless Chromium
// (test/helpers/browser.ts) against the real app on a real port. The rules themselves are
// checked at the route level (console.pages.test.ts); here, that a person can use them: the
// navigation, the forms, no script needed, and a reload after creating an API key.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { launchBrowser, newContext } from '../../test/helpers/browser.ts';
import { buildTestApp } from '../../test/helpers/app.ts';
import { createCustomer, createPlan, createSubscription } from '../../test/helpers/factories.ts';
import { issueTestInvoice } from '../../test/helpers/invoices.ts';
import { createLoginLink } from '../modules/console-sessions/console-sessions.service.ts';

const HOSTILE = '<img src=x onerror="document.title=\'pwned\'">';

test('meters, credit notes, recent events and a new API key in a browser', async (t) => {
  // Both at once, but both settled before going on: when the launch fails (no Chromium), the
  // app must have registered its own closing first, or it keeps the test process alive.
  const [launched, built] = await Promise.allSettled([launchBrowser(t), buildTestApp(t)]);
  if (launched.status === 'rejected') throw launched.reason;
  if (built.status === 'rejected') throw built.reason;
  const [browser, app] = [launched.value, built.value];
  const meter = await app.request('POST', '/api/meters', {
    body: { event_name: 'api_calls', aggregation: 'count', display_name: HOSTILE },
  });
  await createPlan(app, { name: 'Metered', charges: [{ meter_id: meter.body.id, model: 'standard', unit_amount: 2 }] });
  const customer = await createCustomer(app, { name: HOSTILE });
  const subscription = await createSubscription(app, { customerId: customer.id });
  const invoice = await issueTestInvoice(app, subscription.id, { periodStart: '2030-01-01T00:00:00.000Z' });

  const page = await (await newContext(browser)).newPage();
  const link = await createLoginLink(app.deps.db, app.deps.clock, { readOnly: false });
  await page.goto(`${app.baseUrl}/console/login/${link.token}`);
  await page.waitForURL(`${app.baseUrl}/console`);

  await page.getByRole('link', { name: 'Meters' }).click();
  await page.getByRole('link', { name: meter.body.id }).click();
  assert.equal(await page.getByRole('heading', { level: 1 }).textContent(), `Meter ${HOSTILE}`);
  await page.getByRole('cell', { name: 'Metered' }).waitFor();

  await page.goto(`${app.baseUrl}/console/invoices/${invoice.id}`);
  await page.getByRole('textbox', { name: 'Credit amount' }).fill('700');
  await page.getByRole('combobox', { name: 'Reason' }).selectOption('duplicate');
  await page.getByRole('button', { name: 'Issue credit note' }).click();
  await page.getByText('Credit note issued.').waitFor();
  await page.getByTestId('invoice-credit-notes').getByRole('link').first().click();
  await page.getByTestId('credit-note-split').waitFor();
  assert.match((await page.getByTestId('credit-note-amount').textContent())!, /7\.00/);

  await page.getByRole('link', { name: customer.id }).click();
  await page.getByTestId('customer-events').getByText('credit_note.created').waitFor();
  assert.notEqual(await page.title(), 'pwned', 'names are text');

  await page.getByRole('link', { name: 'API keys' }).click();
  await page.getByRole('textbox', { name: 'Key name' }).fill('reload me');
  await page.getByRole('button', { name: 'Create key' }).click();
  const key = (await page.getByTestId('new-key').textContent())!.trim();
  assert.ok(key.length > 20);
  await page.reload();
  assert.equal(await page.getByTestId('new-key').count(), 0, 'a reload shows no key');
  assert.equal(await page.locator('tbody tr', { hasText: 'reload me' }).count(), 1, 'and makes none');
});
