// GET /c/{token} and /c/{token}.pdf over real HTTP (SPEC §14 "Credit notes": "hosted page and
// PDF like invoices"): the note's page in each customer language, a hostile customer name as
// text, the URL on the note (API, list, event), a void note stamped; unknown or malformed
// tokens one 404 page that reveals nothing; a failure a 500 page.
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { test } from 'node:test';
import { sql } from 'kysely';
import { ADMIN_KEY, buildTestApp, type TestApp, type TestResponse } from '../../test/helpers/app.ts';
import { createCustomer, createPlan } from '../../test/helpers/factories.ts';
import { HOSTED_PAGE_CSP } from '../modules/documents/documents.hosted-page.ts';

const ENV = { BUSINESS_NAME: 'Acme Cloud Ltd', PUBLIC_URL: 'https://billing.example.com' };

/** Asserts the headers every hosted page response carries, whatever its status. */
function assertPageHeaders(res: TestResponse) {
  assert.equal(res.headers.get('content-type'), 'text/html; charset=utf-8');
  assert.equal(res.headers.get('content-security-policy'), HOSTED_PAGE_CSP);
  assert.equal(res.headers.get('x-robots-tag'), 'noindex, nofollow');
  assert.equal(res.headers.get('referrer-policy'), 'no-referrer');
  assert.equal(res.headers.get('cache-control'), 'no-store');
  assert.equal(res.headers.get('x-frame-options'), 'DENY');
  assert.doesNotMatch(res.text, /<script/i);
  assert.match(res.text, /^<!doctype html>\n/);
}

interface Note {
  id: string;
  number: string;
  hosted_credit_note_url: string;
}

/** A customer (`customer` fields) subscribed to a EUR plan, and a credit note of 20.00 on its open first invoice. */
async function noteFor(app: TestApp, customer: Record<string, unknown>) {
  const { id: customerId } = await createCustomer(app, customer);
  const { id: planId } = await createPlan(app, { name: 'Pro', amount: 150000, currency: 'EUR' });
  const created = await app.request('POST', '/api/subscriptions', {
    body: { customer_id: customerId, plan_id: planId },
  });
  assert.equal(created.status, 201, created.text);
  const invoice = (await app.request('GET', `/api/invoices?customer_id=${customerId}`)).body.data[0] as {
    id: string;
    number: string;
    hosted_invoice_url: string;
  };
  const issued = await app.request('POST', '/api/credit-notes', {
    body: { invoice_id: invoice.id, amount: 2000, reason: 'duplicate', memo: 'Billed twice <b>oops</b>' },
  });
  assert.equal(issued.status, 201, issued.text);
  const note = issued.body as Note;
  return { note, invoice, path: new URL(note.hosted_credit_note_url).pathname };
}

const HEADINGS: Record<string, [RegExp, RegExp]> = {
  en: [/<h1>Credit note<\/h1>/, /€20\.00 credited/],
  fr: [/<h1>Avoir<\/h1>/, /Avoir de 20,00\u00a0€/],
  de: [/<h1>Gutschrift<\/h1>/, /Gutschrift über 20,00\u00a0€/],
  es: [/<h1>Nota de crédito<\/h1>/, /20,00\u00a0€/],
  pt: [/<h1>Nota de crédito<\/h1>/, /20,00\u00a0€/],
};

test('a credit note’s hosted page is public HTML in the customer’s language; its PDF is the URL + .pdf; a hostile name is text', async (t) => {
  const app = await buildTestApp(t, { env: ENV });
  for (const [locale, [heading, headline]] of Object.entries(HEADINGS)) {
    const { note, invoice, path } = await noteFor(app, {
      name: `<img src=x onerror=alert(1)> "Évé" \u202e & Co ${locale}`,
      email: `${locale}@example.com`,
      preferred_locale: locale,
    });
    assert.match(note.hosted_credit_note_url, /^https:\/\/billing\.example\.com\/c\/[A-Za-z0-9_-]{43}$/);
    // The invoice's token and the note's are different secrets.
    assert.notEqual(path.slice(3), new URL(invoice.hosted_invoice_url).pathname.slice(3));

    const res = await app.request('GET', path, { key: null });
    assert.equal(res.status, 200, locale);
    assertPageHeaders(res);
    assert.match(res.text, new RegExp(`<html lang="${locale}(-[A-Z]{2})?">`));
    assert.match(res.text, heading, locale);
    assert.match(res.text, headline, locale);
    assert.ok(res.text.includes(`<div class="number">${note.number}</div>`));
    assert.ok(res.text.includes(invoice.number));
    assert.ok(res.text.includes(`<a class="download" href="${note.hosted_credit_note_url}.pdf">`));
    // The customer's name and the memo are text, never markup; the bidi override stays isolated.
    assert.ok(
      res.text.includes(`<bdi>&lt;img src=x onerror=alert(1)&gt; &quot;Évé&quot; \u202e &amp; Co ${locale}</bdi>`),
    );
    assert.doesNotMatch(res.text, /<img|<b>/);
    assert.doesNotMatch(res.text, /<form/);

    // The PDF: the same bytes as the API's, public under the token.
    const pdf = await fetch(app.baseUrl + path + '.pdf');
    assert.equal(pdf.status, 200);
    assert.equal(pdf.headers.get('content-type'), 'application/pdf');
    assert.equal(pdf.headers.get('content-disposition'), `inline; filename="${note.number}.pdf"`);
    assert.equal(pdf.headers.get('cache-control'), 'no-store');
    const bytes = Buffer.from(await pdf.arrayBuffer());
    const viaApi = await fetch(`${app.baseUrl}/api/credit-notes/${note.id}/pdf`, {
      headers: { authorization: `Bearer ${ADMIN_KEY}` },
    });
    assert.ok(bytes.equals(Buffer.from(await viaApi.arrayBuffer())), locale);
  }
});

test('the hosted URL is on the note everywhere it is shown: get, list, event; voided, the page is stamped', async (t) => {
  const app = await buildTestApp(t, { env: ENV });
  const { note, path } = await noteFor(app, { name: 'Ana', preferred_locale: 'de-AT' });
  assert.equal(
    (await app.request('GET', `/api/credit-notes/${note.id}`)).body.hosted_credit_note_url,
    note.hosted_credit_note_url,
  );
  const list = await app.request(
    'GET',
    `/api/credit-notes?invoice_id=${(await app.request('GET', `/api/credit-notes/${note.id}`)).body.invoice_id}`,
  );
  assert.equal(list.body.data[0].hosted_credit_note_url, note.hosted_credit_note_url);
  const events = await app.deps.db
    .selectFrom('events')
    .select('data')
    .where('topic', '=', 'credit_note.created')
    .execute();
  assert.ok(events.some((event) => JSON.parse(event.data).hosted_credit_note_url === note.hosted_credit_note_url));

  const issued = await app.request('GET', path, { key: null });
  assert.doesNotMatch(issued.text, /class="stamp"/);
  assert.match(issued.text, /<html lang="de-AT">/);
  const voided = await app.request('POST', `/api/credit-notes/${note.id}/void`);
  assert.equal(voided.status, 200, voided.text);
  assert.equal(voided.body.hosted_credit_note_url, note.hosted_credit_note_url);
  const page = await app.request('GET', path, { key: null });
  assert.equal(page.status, 200);
  assert.match(page.text, /<div class="stamp" aria-hidden="true">Storniert<\/div>/);
});

test('an unknown or malformed token, or any other path under /c, is one 404 HTML page that reveals nothing', async (t) => {
  const app = await buildTestApp(t, { env: ENV });
  const { note, invoice, path } = await noteFor(app, { name: 'Ana' });
  const token = path.slice('/c/'.length);
  const invoiceToken = new URL(invoice.hosted_invoice_url).pathname.slice('/i/'.length);
  const paths = [
    `/c/${'A'.repeat(43)}`, // well-formed, unknown
    `/c/${token.slice(0, -1)}`,
    `/c/${token}x`,
    `/c/${note.id}`, // the id is not a token
    `/c/${note.number}`,
    `/c/${invoiceToken}`, // an invoice's token is not a credit note's
    `/c/${invoiceToken}.pdf`,
    `/c/${token.toLowerCase() === token ? token.toUpperCase() : token.toLowerCase()}`,
    `/c/${'a'.repeat(5000)}`,
    `/c/${'A'.repeat(43)}.pdf`,
    '/c/%zz',
    '/c/%00',
    `/c/${token}%00`,
    `/c/${token}/pay`,
    '/c/',
    '/c/..%2Fapi%2Fhealth',
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
  assert.match(body!, /<title>Credit note not found · Acme Cloud Ltd<\/title>/);
  assert.doesNotMatch(body!, /CN-|cn_|inv_|not_found|"code"/);
  // A note's token is not an invoice's either.
  assert.equal((await app.request('GET', `/i/${token}`, { key: null })).status, 404);
  // A POST to the page is not a route: the same 404 page.
  const post = await app.request('POST', path, { key: null });
  assert.equal(post.status, 404);
  assert.equal(post.text, body);
  assert.equal((await app.request('GET', path, { key: null })).status, 200);
});

test('a failure behind the page is a logged 500 HTML page, never JSON or internals', async (t) => {
  const logs = new PassThrough();
  let logged = '';
  logs.on('data', (chunk: Buffer) => (logged += chunk.toString()));
  const app = await buildTestApp(t, { env: ENV, logStream: logs });
  const { path } = await noteFor(app, { name: 'Ana', preferred_locale: 'fr' });
  await sql`alter table invoices rename to invoices_gone`.execute(app.deps.db);
  const res = await app.request('GET', path, { key: null });
  assert.equal(res.status, 500);
  assertPageHeaders(res);
  assert.match(res.text, /Credit note unavailable/);
  assert.doesNotMatch(res.text, /invoices_gone|sql|error/i);
  assert.match(logged, /hosted credit note page failed/);
});
