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
