// The console's meter, credit note, invoice and subscription pages, a customer's recent events,
// keyset pages, the case-insensitive name search and the new API key page (SPEC §16), at
// the route level: the real app, a session signed in through a one-time link, its cookie and
// CSRF token on each request. One browser pass over the same pages is console.pages.browser.test.ts.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp, type TestApp } from '../../test/helpers/app.ts';
import { createCustomer, createPlan, createSubscription } from '../../test/helpers/factories.ts';
import { issueTestInvoice } from '../../test/helpers/invoices.ts';
import { createLoginLink, listRecentConsoleActions } from '../modules/console-sessions/console-sessions.service.ts';
import { createApiKey } from '../modules/api-keys/api-keys.service.ts';

const HOSTILE = `<script>alert("x")</script><img src=x onerror=alert(1)>`;
const ESCAPED = '&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;';

/** A console session of `app` as a script would hold it: GET and POST with its cookie and CSRF token. */
async function signIn(app: TestApp, readOnly = false) {
  const link = await createLoginLink(app.deps.db, app.deps.clock, { readOnly });
  const login = await app.app.inject({ method: 'GET', url: `/console/login/${link.token}` });
  assert.equal(login.statusCode, 200);
  const cookie = String(login.headers['set-cookie']).split(';')[0]!;
  const get = (url: string) => app.app.inject({ method: 'GET', url, headers: { cookie } });
  const overview = await get('/console');
  const csrf = /name="_csrf" value="([^"]+)"/.exec(overview.body)![1]!;
  const post = (url: string, form: Record<string, string>, withCsrf = true) =>
    app.app.inject({
      method: 'POST',
      url,
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams(withCsrf ? { _csrf: csrf, ...form } : form).toString(),
    });
  return { get, post };
}

/** A cursor as the console writes them (base64url JSON). */
function cursorOf(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

/** Every id linked from `html` under `/console/<kind>/`, in page order. */
function linkedIds(html: string, kind: string): string[] {
  return [...html.matchAll(new RegExp(`href="/console/${kind}/([^"/?]+)"`, 'g'))].map((match) => match[1]!);
}

/** The ids in the first cell of each row of `html`'s tables. */
function firstCellIds(html: string): string[] {
  return [...html.matchAll(/<tr><td>([a-z]+_[0-9A-Z]{26})<\/td>/g)].map((match) => match[1]!);
}

/** Walks a keyset list from `first` by its "Next page" links; the ids of `kind` (or the first cells) on each page. */
async function walk(
  get: (url: string) => Promise<{ body: string }>,
  first: string,
  kind?: string,
): Promise<string[][]> {
  const pages: string[][] = [];
  let url: string | undefined = first;
  while (url !== undefined) {
    const { body } = await get(url);
    pages.push(kind === undefined ? firstCellIds(body) : linkedIds(body, kind));
    url = /<a rel="next" href="([^"]+)"/.exec(body)?.[1]?.replaceAll('&amp;', '&');
    assert.ok(pages.length < 10, 'the pages end');
  }
  return pages;
}

test('meters: the list and a meter with how it counts and the plans that charge it, names as text', async (t) => {
  const app = await buildTestApp(t);
  const meter = await app.request('POST', '/api/meters', {
    body: {
      event_name: 'api_calls',
      aggregation: 'sum',
      value_property: 'calls',
      display_name: HOSTILE,
      late_events: 'drop',
    },
  });
  assert.equal(meter.status, 201, meter.text);
  const other = await app.request('POST', '/api/meters', {
    body: { event_name: 'seats', aggregation: 'count', display_name: 'Seats' },
  });
  const plan = await createPlan(app, {
    name: `Plan ${HOSTILE}`,
    charges: [{ meter_id: meter.body.id, model: 'standard', unit_amount: 3 }],
  });
  await createPlan(app, {
    name: 'Seats only',
    charges: [{ meter_id: other.body.id, model: 'standard', unit_amount: 1 }],
  });
  const console_ = await signIn(app);
  const list = await console_.get('/console/meters');
  assert.equal(list.statusCode, 200);
  assert.deepEqual(linkedIds(list.body, 'meters').sort(), [meter.body.id, other.body.id].sort());
  assert.ok(list.body.includes(ESCAPED) && !list.body.includes(HOSTILE));
  const detail = await console_.get(`/console/meters/${meter.body.id}`);
  assert.equal(detail.statusCode, 200);
  assert.match(detail.body, /sum of property <code>calls<\/code>/);
  assert.match(detail.body, /drop \(stored and listed, never billed\)/);
  assert.ok(detail.body.includes(plan.id), 'the plan charging it');
  assert.ok(!detail.body.includes('Seats only'), 'not a plan charging another meter');
  assert.ok(!detail.body.includes(HOSTILE));
  assert.equal((await console_.get('/console/meters/meter_nope')).statusCode, 404);
});

test('credit notes: issued from the invoice page with CSRF, recorded with the actor, listed, shown with its split; read-only refused', async (t) => {
  const app = await buildTestApp(t);
  const subscription = await createSubscription(app, { customerId: (await createCustomer(app, { name: HOSTILE })).id });
  const invoice = await issueTestInvoice(app, subscription.id, { periodStart: '2030-01-01T00:00:00.000Z' });
  const operator = await signIn(app);
  const readOnly = await signIn(app, true);

  const before = await operator.get(`/console/invoices/${invoice.id}`);
  assert.match(before.body, /Issue credit note/);
  const formKey = /name="form_key" value="([^"]+)"/.exec(before.body)![1]!;
  assert.doesNotMatch((await readOnly.get(`/console/invoices/${invoice.id}`)).body, /Issue credit note/);

  const form = { amount: '1200', reason: 'order_change', memo: HOSTILE, form_key: formKey };
  assert.equal((await operator.post(`/console/invoices/${invoice.id}/credit-notes`, form, false)).statusCode, 403);
  assert.equal((await readOnly.post(`/console/invoices/${invoice.id}/credit-notes`, form)).statusCode, 403);
  const refused = await operator.post(`/console/invoices/${invoice.id}/credit-notes`, { amount: 'ten' });
  assert.equal(refused.statusCode, 400);
  const issued = await operator.post(`/console/invoices/${invoice.id}/credit-notes`, form);
  assert.equal(issued.statusCode, 303, issued.body);
  assert.equal(issued.headers.location, `/console/invoices/${invoice.id}?notice=credited`);
  // The same form again (a double click, a resubmit) finds the note; it does not issue another.
  assert.equal((await operator.post(`/console/invoices/${invoice.id}/credit-notes`, form)).statusCode, 303);

  const notes = await app.request('GET', `/api/credit-notes?invoice_id=${invoice.id}`);
  assert.equal(notes.body.data.length, 1);
  const note = notes.body.data[0];
  assert.equal(note.amount, 1200);
  assert.equal(note.pre_payment_amount, 1200);
  const events = await app.request('GET', '/api/events?topic=credit_note.created');
  assert.equal(events.body.data[0].actor.type, 'console_session');
  const actions = await listRecentConsoleActions(app.deps.db, 10);
  assert.deepEqual(
    actions
      .filter((a) => a.action === 'credit_note.create')
      .map((a) => a.outcome)
      .sort(),
    ['refused', 'succeeded', 'succeeded'],
  );
  assert.ok(
    actions.some((a) => a.action.endsWith('/credit-notes') && a.outcome === 'refused'),
    'the read-only POST',
  );

  const invoicePage = await operator.get(`/console/invoices/${invoice.id}`);
  assert.ok(invoicePage.body.includes(`href="/console/credit-notes/${note.id}"`));
  assert.ok(invoicePage.body.includes(`/console/credit-notes?invoice_id=${invoice.id}`));
  const list = await operator.get(`/console/credit-notes?invoice_id=${invoice.id}`);
  assert.deepEqual(linkedIds(list.body, 'credit-notes'), [note.id]);
  const page = await operator.get(`/console/credit-notes/${note.id}`);
  assert.equal(page.statusCode, 200);
  assert.match(page.body, /data-testid="credit-note-split"/);
  assert.ok(page.body.includes(note.hosted_credit_note_url));
  assert.ok(page.body.includes(`/console/credit-notes/${note.id}/pdf`));
  assert.ok(!page.body.includes(HOSTILE) && page.body.includes(ESCAPED), 'the memo is text');
  assert.doesNotMatch((await readOnly.get(`/console/credit-notes/${note.id}`)).body, /Void credit note/);
  const pdf = await operator.get(`/console/credit-notes/${note.id}/pdf`);
  assert.equal(pdf.statusCode, 200);
  assert.equal(pdf.headers['content-type'], 'application/pdf');
  assert.equal(pdf.rawPayload.subarray(0, 5).toString(), '%PDF-');

  assert.equal((await readOnly.post(`/console/credit-notes/${note.id}/void`, {})).statusCode, 403);
  assert.equal((await operator.post(`/console/credit-notes/${note.id}/void`, {})).statusCode, 303);
  assert.equal((await app.request('GET', `/api/credit-notes/${note.id}`)).body.status, 'void');
});

test("a customer's page lists its newest events, read by customer, names as text", async (t) => {
  const app = await buildTestApp(t);
  const customer = await createCustomer(app, { name: HOSTILE, metadata: { note: HOSTILE } });
  const other = await createCustomer(app);
  const subscription = await createSubscription(app, { customerId: customer.id });
  await app.request('PATCH', `/api/customers/${customer.id}`, { body: { phone: '+2348000000000' } });
  const { get } = await signIn(app);
  const page = await get(`/console/customers/${customer.id}`);
  assert.equal(page.statusCode, 200);
  const events = page.body.slice(page.body.indexOf('data-testid="customer-events"'));
  for (const topic of ['customer.created', 'customer.updated', 'subscription.created'])
    assert.match(events, new RegExp(topic));
  assert.ok(events.includes(subscription.id));
  assert.ok(!page.body.includes(other.id));
  assert.ok(!page.body.includes(HOSTILE) && page.body.includes(ESCAPED));
  const rows = await app.deps.db
    .selectFrom('events')
    .select('customer_id')
    .where('topic', '=', 'subscription.created')
    .execute();
  assert.deepEqual(
    rows.map((row) => row.customer_id),
    [customer.id],
  );
});

test('lists page by keyset: every invoice, subscription and API key once, across pages; a forged cursor starts over', async (t) => {
  const app = await buildTestApp(t);
  const plan = await createPlan(app);
  const subscriptions = [];
  for (let i = 0; i < 27; i += 1) {
    subscriptions.push(await createSubscription(app, { planId: plan.id }));
    app.clock.advance(1000);
  }
  for (const [i, subscription] of subscriptions.entries()) {
    await issueTestInvoice(app, subscription.id, {
      periodStart: `2031-01-${String(i + 1).padStart(2, '0')}T00:00:00.000Z`,
    });
  }
  const open = await app.request('GET', '/api/invoices?status=open&limit=100');
  const invoices = new Set(open.body.data.map((invoice: { id: string }) => invoice.id));
  for (let i = 0; i < 26; i += 1) await createApiKey(app.deps.db, app.deps.clock, { name: `key ${i}`, scope: 'read' });
  const { get } = await signIn(app);
  const invoicePages = await walk(get, '/console/invoices?status=open', 'invoices');
  assert.deepEqual(
    invoicePages.map((ids) => ids.length),
    [25, 25, invoices.size - 50],
  );
  assert.deepEqual(new Set(invoicePages.flat()), invoices);
  const subscriptionPages = await walk(get, '/console/subscriptions', 'subscriptions');
  assert.deepEqual(subscriptionPages.flat(), subscriptions.map((s) => s.id).reverse(), 'newest first, each once');
  const keys = await app.request('GET', '/api/api-keys?limit=100');
  const keyPages = await walk(get, '/console/api-keys');
  assert.deepEqual(keyPages.flat().sort(), keys.body.data.map((key: { id: string }) => key.id).sort(), 'each key once');
  assert.equal(keyPages.length, 2);
  for (const after of [
    'not-a-cursor',
    cursorOf(['not a date', 'inv_1']),
    cursorOf(['2031-01-01T00:00:00.000Z', 'x\u0000']),
  ]) {
    const forged = await get(`/console/invoices?after=${after}`);
    assert.equal(forged.statusCode, 200, after);
    assert.deepEqual(linkedIds(forged.body, 'invoices'), invoicePages[0], 'the first page again');
  }
  const customers = await get(`/console/customers?q=a&after=${cursorOf(['a\u0000', 'cus_1'])}`);
  assert.equal(customers.statusCode, 200);
});

test('name search ignores case and width on both databases; email search ignores case', async (t) => {
  const app = await buildTestApp(t);
  const customer = await createCustomer(app, { name: 'Ｚoë Ångström', email: 'Zoe.Angstrom@Example.com' });
  await createCustomer(app, { name: 'Zorro' });
  const { get } = await signIn(app);
  const byName = await get(`/console/customers?by=name&q=${encodeURIComponent('zOË å')}`);
  assert.deepEqual(linkedIds(byName.body, 'customers'), [customer.id]);
  const byEmail = await get('/console/customers?by=email&q=ZOE.ANG');
  assert.deepEqual(linkedIds(byEmail.body, 'customers'), [customer.id]);
});

test('a new API key: POST then redirect; the page shows the key once; a reload shows none and makes none', async (t) => {
  const app = await buildTestApp(t);
  const { get, post } = await signIn(app);
  const count = async () => (await app.request('GET', '/api/api-keys?limit=100')).body.meta.total as number;
  const before = await count();
  const created = await post('/console/api-keys', { name: HOSTILE, scope: 'read' });
  assert.equal(created.statusCode, 303);
  assert.equal(created.headers.location, '/console/api-keys');
  assert.doesNotMatch(created.body, /data-testid="new-key"/);
  const shown = await get('/console/api-keys');
  const key = /data-testid="new-key">([^<]+)</.exec(shown.body)?.[1];
  assert.ok(key && key.length > 20, 'the key is on the page after the redirect');
  assert.ok(!shown.body.includes(HOSTILE) && shown.body.includes(ESCAPED));
  const reloaded = await get('/console/api-keys');
  assert.doesNotMatch(reloaded.body, /data-testid="new-key"/);
  assert.ok(!reloaded.body.includes(key));
  assert.equal(await count(), before + 1);
  // Another session never sees it.
  const other = await signIn(app);
  assert.equal((await other.post('/console/api-keys', { name: 'second', scope: 'read' })).statusCode, 303);
  assert.ok(!(await get('/console/api-keys')).body.includes('data-testid="new-key"'));
  const readOnly = await signIn(app, true);
  assert.equal((await readOnly.post('/console/api-keys', { name: 'no', scope: 'read' })).statusCode, 403);
  assert.equal(await count(), before + 2);
});
