// GET /api/invoices/{id}/pdf and /i/{token}.pdf over real HTTP (SPEC §14 "Documents"): an
// invoice issued by the API for a customer who prefers German is a PDF whose text says so;
// the hosted link serves the same bytes; keys, scopes, unknown ids and drafts.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { extractText, getDocumentProxy } from 'unpdf';
import { ADMIN_KEY, buildTestApp, type TestApp } from '../../test/helpers/app.ts';
import { createCustomer, createPlan } from '../../test/helpers/factories.ts';

const ENV = {
  BUSINESS_NAME: 'Acme Cloud Ltd',
  BUSINESS_ADDRESS: '1 Main Street\\n10115 Berlin',
  BUSINESS_TAX_ID: 'DE999999999',
  PUBLIC_URL: 'https://billing.example.com',
};

/** GET `path` with `key` (null: none): status, headers and the body's bytes. */
async function get(app: TestApp, path: string, key: string | null = ADMIN_KEY) {
  const response = await fetch(app.baseUrl + path, { headers: key === null ? {} : { authorization: `Bearer ${key}` } });
  return { status: response.status, headers: response.headers, bytes: Buffer.from(await response.arrayBuffer()) };
}

async function textOf(bytes: Buffer): Promise<string> {
  const { text } = await extractText(await getDocumentProxy(new Uint8Array(bytes)), { mergePages: true });
  return text.replace(/[\u00a0\u202f]/g, ' ');
}

/** A customer who prefers `locale`, subscribed to a €1,500.00 plan: its first, open invoice. */
async function openInvoice(app: TestApp, locale: string | null) {
  const customer = await createCustomer(app, { name: 'Jürgen Müller', preferred_locale: locale });
  const plan = await createPlan(app, { name: 'Pro', amount: 150000, currency: 'EUR' });
  const created = await app.request('POST', '/api/subscriptions', {
    body: { customer_id: customer.id, plan_id: plan.id },
  });
  assert.equal(created.status, 201, created.text);
  const list = await app.request('GET', `/api/invoices?customer_id=${customer.id}`);
  assert.equal(list.body.data.length, 1);
  return list.body.data[0] as { id: string; number: string; hosted_invoice_url: string };
}

test('the PDF of an invoice is application/pdf in the customer’s language; the hosted link serves the same bytes', async (t) => {
  const app = await buildTestApp(t, { env: ENV });
  const invoice = await openInvoice(app, 'de-AT');
  const res = await get(app, `/api/invoices/${invoice.id}/pdf`);
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('content-type'), 'application/pdf');
  assert.equal(res.headers.get('content-disposition'), `inline; filename="${invoice.number}.pdf"`);
  assert.equal(res.headers.get('cache-control'), 'private, no-cache');
  const text = await textOf(res.bytes);
  for (const expected of [
    'RECHNUNG',
    invoice.number,
    'Acme Cloud Ltd',
    '10115 Berlin',
    'Steuer-ID: DE999999999',
    'Jürgen Müller',
    'Gesamt € 1.500,00', // de-AT: the euro sign before the amount
    'Offener Betrag € 1.500,00',
  ]) {
    assert.ok(text.includes(expected), `${expected} in:\n${text}`);
  }
  // The hosted page links to its PDF.
  const page = await app.request('GET', new URL(invoice.hosted_invoice_url).pathname, { key: null });
  const link = /<a class="download" href="([^"]+)">PDF herunterladen<\/a>/.exec(page.text);
  assert.ok(link, page.text);
  assert.equal(link[1], `${invoice.hosted_invoice_url}.pdf`);
  const hosted = await get(app, new URL(link[1]!).pathname, null);
  assert.equal(hosted.status, 200);
  assert.equal(hosted.headers.get('content-type'), 'application/pdf');
  assert.equal(hosted.headers.get('x-robots-tag'), 'noindex, nofollow');
  assert.equal(hosted.headers.get('cache-control'), 'no-store');
  assert.ok(hosted.bytes.equals(res.bytes), 'the same document');
  // Asked again, the same bytes: nothing in it comes from the clock; its ETag answers 304.
  app.clock.advance(3_600_000);
  const again = await get(app, `/api/invoices/${invoice.id}/pdf`);
  assert.ok(again.bytes.equals(res.bytes));
  const etag = res.headers.get('etag')!;
  assert.match(etag, /^"[A-Za-z0-9_-]{22}"$/);
  assert.equal(again.headers.get('etag'), etag);
  const unchanged = await fetch(`${app.baseUrl}/api/invoices/${invoice.id}/pdf`, {
    headers: { authorization: `Bearer ${ADMIN_KEY}`, 'if-none-match': etag },
  });
  assert.equal(unchanged.status, 304);
});

test('a customer without a preferred locale gets English; a PATCHed locale changes the next PDF', async (t) => {
  const app = await buildTestApp(t, { env: ENV });
  const invoice = await openInvoice(app, null);
  let text = await textOf((await get(app, `/api/invoices/${invoice.id}/pdf`)).bytes);
  assert.ok(text.includes('Total €1,500.00'), text);
  const { customer_id } = (await app.request('GET', `/api/invoices/${invoice.id}`)).body;
  assert.equal(
    (await app.request('PATCH', `/api/customers/${customer_id}`, { body: { preferred_locale: 'fr' } })).status,
    200,
  );
  text = await textOf((await get(app, `/api/invoices/${invoice.id}/pdf`)).bytes);
  assert.ok(text.includes('Total 1 500,00 €'), text);
});

test('a draft has a PDF through the API, marked DRAFT, and none at a hosted link; unknown ids are 404; a key is required', async (t) => {
  const app = await buildTestApp(t, { env: ENV });
  const invoice = await openInvoice(app, 'en');
  const token = new URL(invoice.hosted_invoice_url).pathname;
  // Written as a draft is stored (SPEC §12 "Drafts"): no number yet, a finalization time.
  await app.deps.db
    .updateTable('invoices')
    .set({ status: 'draft', number: null, finalizes_at: '2026-01-15T11:00:00.000Z' })
    .where('id', '=', invoice.id)
    .execute();
  const draft = await get(app, `/api/invoices/${invoice.id}/pdf`);
  assert.equal(draft.status, 200);
  assert.equal(draft.headers.get('content-disposition'), `inline; filename="${invoice.id}.pdf"`);
  const text = await textOf(draft.bytes);
  assert.ok(text.includes('DRAFT'), text);
  assert.ok(text.includes('This is a draft: it is not final and cannot be paid yet.'), text);
  const hosted = await get(app, `${token}.pdf`, null);
  assert.equal(hosted.status, 404);
  assert.match(hosted.headers.get('content-type')!, /^text\/html/);
  assert.equal((await get(app, `/i/${'A'.repeat(43)}.pdf`, null)).status, 404);
  assert.equal((await get(app, '/api/invoices/inv_01JD3Q7Z8X9Y0A1B2C3D4E5F6G/pdf')).status, 404);
  assert.equal((await get(app, '/api/invoices/nope/pdf')).status, 404);
  assert.equal((await get(app, `/api/invoices/${invoice.id}/pdf`, null)).status, 401);
});

test('the worked example end to end: 20 % off €49.00 with 19 % VAT exclusive is discount 9.80, tax 7.45, total 46.65 on the invoice, its page and its PDF; a reverse-charged buyer’s PDF shows its address, VAT id and "Reverse charge"', async (t) => {
  const app = await buildTestApp(t, { env: ENV });
  const rate = await app.request('POST', '/api/tax-rates', {
    body: { display_name: 'MwSt.', percentage: 19, inclusive: false, country: 'DE' },
  });
  assert.equal(rate.status, 201, rate.text);
  const coupon = await app.request('POST', '/api/coupons', {
    body: { name: 'Launch', percent_off: 20, duration: 'forever' },
  });
  assert.equal(coupon.status, 201, coupon.text);
  const plan = await createPlan(app, { name: 'Pro', amount: 4900, currency: 'EUR', tax_rate_ids: [rate.body.id] });
  const address = { line1: 'Hauptstraße 5', postal_code: '10115', city: 'Berlin', country: 'DE' };

  const invoiceFor = async (body: Record<string, unknown>) => {
    const customer = await app.request('POST', '/api/customers', { body: { preferred_locale: 'de', ...body } });
    assert.equal(customer.status, 201, customer.text);
    const sub = await app.request('POST', '/api/subscriptions', {
      body: { customer_id: customer.body.id, plan_id: plan.id, coupon: coupon.body.id },
    });
    assert.equal(sub.status, 201, sub.text);
    return (await app.request('GET', `/api/invoices?subscription_id=${sub.body.id}`)).body.data[0];
  };

  const taxed = await invoiceFor({ email: 'einkauf@example.de', name: 'Käufer GmbH' });
  assert.deepEqual(
    [taxed.subtotal, taxed.total_discount, taxed.total_tax, taxed.total, taxed.amount_due],
    [4900, 980, 745, 4665, 4665],
  );
  assert.deepEqual(
    taxed.lines.map((line: { kind: string; amount: number }) => [line.kind, line.amount]),
    [
      ['subscription', 4900],
      ['discount', -980],
      ['tax', 745],
    ],
  );
  const taxedText = await textOf((await get(app, `/api/invoices/${taxed.id}/pdf`)).bytes);
  for (const expected of ['Zwischensumme 49,00 €', '-9,80 €', 'MwSt. 19 % 7,45 €', 'Gesamt 46,65 €']) {
    assert.ok(taxedText.includes(expected), `${expected} in:\n${taxedText}`);
  }
  const page = await fetch(taxed.hosted_invoice_url.replace('https://billing.example.com', app.baseUrl));
  assert.match(await page.text(), /46,65\u00a0€/);

  const reversed = await invoiceFor({
    email: 'reverse@example.de',
    name: 'Reverse GmbH',
    tax_exempt: 'reverse',
    tax_ids: [{ type: 'eu_vat', value: 'DE123456789' }],
    address,
  });
  assert.deepEqual([reversed.total_tax, reversed.total, reversed.reverse_charge], [0, 3920, true]);
  const reversedText = await textOf((await get(app, `/api/invoices/${reversed.id}/pdf`)).bytes);
  for (const expected of ['Hauptstraße 5', '10115 Berlin', 'DE123456789', 'Steuerschuldnerschaft', 'Gesamt 39,20 €']) {
    assert.ok(reversedText.includes(expected), `${expected} in:\n${reversedText}`);
  }
  assert.ok(!reversedText.includes('MwSt.'), reversedText);
});
