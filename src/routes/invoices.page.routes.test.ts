// GET /i/{token} over real HTTP (SPEC §9 "Hosted invoice page"): invoices issued with
// issueInvoice and moved with transitionInvoice, as the billing code does; the page compared
// byte for byte with a committed snapshot; headers, 404s, 429 and 500 all HTML.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { PassThrough } from 'node:stream';
import { test } from 'node:test';
import { sql } from 'kysely';
import { buildTestApp, type TestApp, type TestResponse } from '../../test/helpers/app.ts';
import { createCustomer, createPlan } from '../../test/helpers/factories.ts';
import { PAYSTACK_SECRET } from '../../test/helpers/provider-events.ts';
import { temporaryFile, TINY_PNG } from '../../test/helpers/documents.ts';
import { findPlan } from '../modules/plans/plans.service.ts';
import { lockSubscription } from '../modules/subscriptions/subscriptions.lifecycle.ts';
import { HOSTED_PAGE_CSP } from '../modules/documents/documents.hosted-page.ts';
import { issueInvoice, lockInvoice, transitionInvoice } from '../modules/invoices/invoices.lifecycle.ts';
import type { InvoiceEvent } from '../modules/invoices/invoices.status.ts';
import { periodInvoiceInput } from '../billing/compose/input.ts';
import { composeInvoice, PIPELINE } from '../billing/compose/pipeline.ts';
import type { InvoiceLineDraft } from '../modules/invoices/invoices.schemas.ts';

const SNAPSHOT = new URL('./hosted-page.snapshot.html', import.meta.url);
const ENV = { BUSINESS_NAME: 'Acme Cloud Ltd', PUBLIC_URL: 'https://billing.example.com' };
const START = '2026-01-15T10:00:00.000Z';
const END = '2026-02-15T10:00:00.000Z';

/**
 * Issues an invoice for a new trialing subscription (a trial has no invoice of its own, so
 * this is the subscription's only one) of `customer` on a plan, with `extra` lines after the
 * plan's; returns the invoice and the path of its page.
 */
async function issue(
  app: TestApp,
  options: {
    customer?: Record<string, unknown>;
    plan?: Record<string, unknown>;
    extra?: InvoiceLineDraft[];
  } = {},
) {
  const customer = await createCustomer(app, options.customer);
  const plan = await createPlan(app, options.plan);
  const res = await app.request('POST', '/api/subscriptions', {
    body: { customer_id: customer.id, plan_id: plan.id, trial_period_days: 7 },
  });
  assert.equal(res.status, 201, res.text);
  const { invoice } = await app.deps.db.transaction().execute(async (trx) => {
    const subscription = await lockSubscription(trx, res.body.id);
    const planRow = (await findPlan(trx, subscription.plan_id))!;
    return issueInvoice(trx, app.deps, {
      customerId: customer.id,
      subscriptionId: subscription.id,
      billingReason: 'subscription_cycle',
      currency: planRow.currency,
      periodStart: START,
      periodEnd: END,
      dueAt: '2026-01-22T10:00:00.000Z',
      // The extra lines come from a step appended to the pipeline, as a new kind of line would.
      content: composeInvoice(
        periodInvoiceInput({
          reason: 'renewal',
          customerId: customer.id,
          subscriptionId: subscription.id,
          plan: planRow,
          periodStart: START,
          periodEnd: END,
        }),
        [...PIPELINE, (lines) => [...lines, ...(options.extra ?? [])]],
      ),
    });
  });
  return {
    invoice,
    customer,
    subscriptionId: res.body.id as string,
    path: new URL(invoice.hosted_invoice_url!).pathname,
  };
}

/** Moves invoice `id` by `event` (with `amountPaid` for payments), as settlement would. */
async function move(app: TestApp, id: string, event: InvoiceEvent, amountPaid?: number) {
  await app.deps.db.transaction().execute(async (trx) => {
    const row = await lockInvoice(trx, id);
    return transitionInvoice(trx, app.deps, row, event, amountPaid === undefined ? {} : { amount_paid: amountPaid });
  });
}

/** Asserts the headers every hosted page response carries, whatever its status. */
function assertPageHeaders(res: TestResponse) {
  assert.equal(res.headers.get('content-type'), 'text/html; charset=utf-8');
  assert.equal(res.headers.get('content-security-policy'), HOSTED_PAGE_CSP);
  assert.equal(res.headers.get('x-robots-tag'), 'noindex, nofollow');
  assert.equal(res.headers.get('referrer-policy'), 'no-referrer');
  assert.equal(res.headers.get('cache-control'), 'no-store');
  assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
  assert.equal(res.headers.get('x-frame-options'), 'DENY');
  assert.doesNotMatch(res.text, /<script/i);
  assert.match(res.text, /^<!doctype html>\n/);
  assert.match(res.text, /<meta name="robots" content="noindex, nofollow">/);
}

test('the page of an open invoice is public HTML with its Pay button, identical to the committed snapshot', async (t) => {
  // Paystack can collect (a key; no call is made to show the page): the Pay button shows.
  const app = await buildTestApp(t, { env: { ...ENV, PAYSTACK_SECRET_KEY: PAYSTACK_SECRET } });
  const { invoice, path } = await issue(app, {
    customer: { name: 'Ada "Countess" <Lovelace> & Co.', email: 'ada@example.com' },
    plan: { name: 'Pro (monthly)', amount: 500000, currency: 'NGN' },
    extra: [
      {
        kind: 'adjustment',
        description: 'Extra seats <script>alert(1)</script>',
        amount: 150000,
        currency: 'NGN',
        quantity: 3,
        unit_amount: 50000,
        period_start: START,
        period_end: END,
        plan_id: null,
        proration: false,
      },
    ],
  });
  assert.match(invoice.hosted_invoice_url!, /^https:\/\/billing\.example\.com\/i\/[A-Za-z0-9_-]{43}$/);
  const res = await app.request('GET', path, { key: null });
  assert.equal(res.status, 200);
  assertPageHeaders(res);
  // The token is random: the snapshot holds TOKEN in its place (the Pay button's action).
  const token = path.slice('/i/'.length);
  const stable = res.text.replaceAll(token, 'TOKEN');
  if (process.env.UPDATE_SNAPSHOTS === '1') writeFileSync(SNAPSHOT, stable);
  assert.equal(stable, readFileSync(SNAPSHOT, 'utf8'));
  // User input arrives escaped and bidi-isolated, never as markup.
  assert.match(res.text, /<bdi>Ada &quot;Countess&quot; &lt;Lovelace&gt; &amp; Co\.<\/bdi>/);
  assert.match(res.text, /<bdi>Extra seats &lt;script&gt;alert\(1\)&lt;\/script&gt;<\/bdi>/);
  assert.ok(res.text.includes(`<form class="pay" method="post" action="${path}/pay">`));
  // An API key changes nothing; HEAD answers the same headers without a body.
  const keyed = await app.request('GET', path);
  assert.equal(keyed.text, res.text);
  const head = await app.request('HEAD', path, { key: null });
  assert.equal(head.status, 200);
  assert.equal(head.text, '');
  assert.equal(head.headers.get('content-security-policy'), HOSTED_PAGE_CSP);
});

test('paid, partly paid, void and uncollectible invoices show their state, stamp and totals', async (t) => {
  const app = await buildTestApp(t, { env: ENV });
  const paid = await issue(app, { plan: { name: 'Business', amount: 4900, currency: 'USD' } });
  app.clock.advance(5 * 86_400_000);
  await move(app, paid.invoice.id, 'paid', 4900);
  let res = await app.request('GET', paid.path, { key: null });
  assert.equal(res.status, 200);
  assertPageHeaders(res);
  assert.match(res.text, /<main class="sheet status-paid">/);
  assert.match(res.text, /<div class="stamp" aria-hidden="true">Paid<\/div>/);
  assert.match(res.text, /\$49\.00 paid<small>Paid on 20 January 2026\. Thank you\.<\/small>/);
  assert.match(res.text, /Amount paid<\/th><td class="num">\$49\.00</);
  assert.match(res.text, /Amount remaining<\/th><td class="num">\$0\.00</);

  // A partial payment (written as settlement writes it) leaves the invoice open with the rest due.
  const partial = await issue(app, { plan: { name: 'Team', amount: 12000, currency: 'JPY' } });
  await app.deps.db.updateTable('invoices').set({ amount_paid: 2000 }).where('id', '=', partial.invoice.id).execute();
  res = await app.request('GET', partial.path, { key: null });
  assert.match(res.text, /<p class="summary">¥10,000 due 22 January 2026<\/p>/);
  assert.match(res.text, /Amount due<\/th><td class="num">¥12,000</);
  assert.match(res.text, /Amount paid<\/th><td class="num">¥2,000</);
  assert.doesNotMatch(res.text, /class="stamp"/);

  const voided = await issue(app, { plan: { amount: 1500, currency: 'KWD' } });
  await move(app, voided.invoice.id, 'void');
  res = await app.request('GET', voided.path, { key: null });
  assert.match(res.text, /<div class="stamp" aria-hidden="true">Void<\/div>/);
  assert.match(res.text, /Nothing to pay<small>This invoice was voided on 20 January 2026\.<\/small>/);
  assert.match(res.text, /Amount due<\/th><td class="num">KWD\u00a01\.500</);

  const lost = await issue(app);
  await move(app, lost.invoice.id, 'mark_uncollectible');
  res = await app.request('GET', lost.path, { key: null });
  assert.match(res.text, /<div class="stamp" aria-hidden="true">Uncollectible<\/div>/);
  assert.match(res.text, /₦50\.00 outstanding/);
});

test('a deleted customer stays the billed-to party of the invoices it was sent', async (t) => {
  const app = await buildTestApp(t, { env: ENV });
  const { customer, subscriptionId, path } = await issue(app, {
    customer: { name: 'Grace Hopper', email: 'grace@example.com' },
  });
  // The subscription goes first: a customer with a live subscription cannot be deleted.
  assert.equal((await app.request('PUT', `/api/subscriptions/${subscriptionId}/cancel`)).status, 200);
  assert.equal((await app.request('DELETE', `/api/customers/${customer.id}`)).status, 204);
  const res = await app.request('GET', path, { key: null });
  assert.equal(res.status, 200);
  assert.match(res.text, /<p class="name"><bdi>Grace Hopper<\/bdi><\/p>\n<p><bdi>grace@example\.com<\/bdi><\/p>/);
});

test('an unknown or malformed token, or any other path under /i, is one 404 HTML page that reveals nothing', async (t) => {
  const app = await buildTestApp(t, { env: ENV });
  const { invoice, path } = await issue(app);
  const token = path.slice('/i/'.length);
  const paths = [
    `/i/${'A'.repeat(43)}`, // well-formed, unknown
    `/i/${token.slice(0, -1)}`, // one character short
    `/i/${token}x`, // one too many
    `/i/${invoice.id}`, // the invoice id is not a token
    `/i/${token.toLowerCase() === token ? token.toUpperCase() : token.toLowerCase()}`,
    `/i/${'a'.repeat(5000)}`,
    '/i/%zz', // refused by the router (malformed percent-encoding)
    '/i/%E0%A4%A',
    '/i/%00', // NUL: refused by the text guard
    `/i/${token}%00`,
    `/i/${token}?x=%00`,
    '/i/',
    '/i',
    `/i/${token}/pay`,
    '/i/..%2Fapi%2Fhealth',
  ];
  const bodies = new Set<string>();
  for (const candidate of paths) {
    const res = await app.request('GET', candidate, { key: null });
    assert.equal(res.status, 404, candidate);
    assertPageHeaders(res);
    bodies.add(res.text);
  }
  assert.equal(bodies.size, 1);
  const [body] = [...bodies];
  assert.match(body!, /<title>Invoice not found · Acme Cloud Ltd<\/title>/);
  assert.doesNotMatch(body!, /INV-|inv_|not_found|"code"/);
  // The real token still works.
  assert.equal((await app.request('GET', path, { key: null })).status, 200);
  // Elsewhere the refusals keep the JSON envelope.
  const api = await app.request('GET', '/api/customers/%zz');
  assert.equal(api.status, 400);
  assert.equal(api.body.code, 'validation_error');
});

test('the page is rate limited per IP like every public route, and the 429 is an HTML page with Retry-After', async (t) => {
  const app = await buildTestApp(t, { env: { ...ENV, RATE_LIMIT_MAX: '3', RATE_LIMIT_WINDOW: '1h' } });
  const { path } = await issue(app); // three API requests: the key's budget, not the IP's public one
  // RATE_LIMIT_MAX × 10 per IP on public routes.
  for (let i = 0; i < 30; i += 1) assert.equal((await app.request('GET', path, { key: null })).status, 200);
  const res = await app.request('GET', path, { key: null });
  assert.equal(res.status, 429);
  assertPageHeaders(res);
  assert.match(res.text, /Too many requests/);
  assert.ok(Number(res.headers.get('retry-after')) >= 1);
});

test('a failure behind the page is a logged 500 HTML page, never JSON or internals', async (t) => {
  const logs = new PassThrough();
  let logged = '';
  logs.on('data', (chunk: Buffer) => (logged += chunk.toString()));
  const app = await buildTestApp(t, { env: ENV, logStream: logs });
  const { path } = await issue(app);
  await sql`alter table invoices rename to invoices_gone`.execute(app.deps.db);
  const res = await app.request('GET', path, { key: null });
  assert.equal(res.status, 500);
  assertPageHeaders(res);
  assert.match(res.text, /Invoice unavailable/);
  assert.doesNotMatch(res.text, /invoices_gone|invoices|sql|error/i);
  assert.match(logged, /hosted invoice page failed/);
});

test('/openapi.json leaves the page out: it is not part of the JSON API', async (t) => {
  const app = await buildTestApp(t);
  const res = await app.request('GET', '/openapi.json');
  assert.equal(res.status, 200);
  assert.deepEqual(
    Object.keys(res.body.paths).filter((p) => !p.startsWith('/api/')),
    [],
  );
});

test('BUSINESS_LOGO_PATH: the page shows the logo inline (nothing fetched) and the PDF embeds it', async (t) => {
  const app = await buildTestApp(t, { env: { ...ENV, BUSINESS_LOGO_PATH: temporaryFile(t, 'logo.png', TINY_PNG) } });
  const { path } = await issue(app);
  const page = await app.request('GET', path, { key: null });
  assert.equal(page.status, 200);
  assertPageHeaders(page);
  assert.ok(page.text.includes(`<img class="logo" src="data:image/png;base64,${TINY_PNG.toString('base64')}" alt="">`));
  assert.doesNotMatch(page.text, /<img[^>]+src="(?!data:)/, 'no image from elsewhere');
  const pdf = await fetch(`${app.baseUrl}${path}.pdf`);
  assert.equal(pdf.status, 200);
  assert.match(Buffer.from(await pdf.arrayBuffer()).toString('latin1'), /\/Subtype \/Image/);
});
