// GET /api/credit-notes/{id}/pdf over real HTTP (SPEC §14 "Credit notes"): a German customer's
// note on an open invoice says "Gutschrift" and shows what it took off the amount due; an
// English customer's note on a paid invoice shows its lines and how it split; void notes are
// stamped; keys and unknown ids.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { extractText, getDocumentProxy } from 'unpdf';
import { ADMIN_KEY, buildTestApp, type TestApp } from '../../test/helpers/app.ts';
import { createCustomer, createPlan } from '../../test/helpers/factories.ts';
import { reportPayment } from '../../test/helpers/invoice-payments.ts';
import { PROVIDER_ENV } from '../../test/helpers/provider-events.ts';

const ENV = { ...PROVIDER_ENV, BUSINESS_NAME: 'Acme Cloud Ltd', BUSINESS_ADDRESS: '1 Main Street\\n10115 Berlin' };

/** GET `path` with `key` (null: none): status, headers and the body's bytes. */
async function get(app: TestApp, path: string, key: string | null = ADMIN_KEY) {
  const response = await fetch(app.baseUrl + path, { headers: key === null ? {} : { authorization: `Bearer ${key}` } });
  return { status: response.status, headers: response.headers, bytes: Buffer.from(await response.arrayBuffer()) };
}

async function textOf(bytes: Buffer): Promise<string> {
  const { text } = await extractText(await getDocumentProxy(new Uint8Array(bytes)), { mergePages: true });
  // A long label may wrap inside its column: compare words, not lines.
  return text.replace(/[\u00a0\u202f]/g, ' ').replace(/\s+/g, ' ');
}

function assertIncludes(text: string, expected: readonly string[]): void {
  for (const part of expected) assert.ok(text.includes(part), `${part} in:\n${text}`);
}

/** A customer who prefers `locale`, subscribed to a plan: the subscription and its first invoice. */
async function firstInvoice(app: TestApp, locale: string, plan: { amount: number; currency: string }) {
  const customer = await createCustomer(app, { name: 'Jürgen Müller', preferred_locale: locale });
  const { id: planId } = await createPlan(app, { name: 'Pro', ...plan });
  const created = await app.request('POST', '/api/subscriptions', {
    body: { customer_id: customer.id, plan_id: planId },
  });
  assert.equal(created.status, 201, created.text);
  const list = await app.request('GET', `/api/invoices?customer_id=${customer.id}`);
  const invoice = list.body.data[0] as { id: string; number: string; lines: { id: string; kind: string }[] };
  return { subscriptionId: created.body.id as string, invoice };
}

test('a German customer’s credit note on an open invoice is a PDF saying "Gutschrift", in German formats; void: stamped', async (t) => {
  const app = await buildTestApp(t, { env: ENV });
  const { invoice } = await firstInvoice(app, 'de-DE', { amount: 150000, currency: 'EUR' });
  const issued = await app.request('POST', '/api/credit-notes', {
    body: { invoice_id: invoice.id, amount: 20000, reason: 'product_unsatisfactory', memo: 'Zwei Tage Ausfall' },
  });
  assert.equal(issued.status, 201, issued.text);
  const note = issued.body as { id: string; number: string };

  const res = await get(app, `/api/credit-notes/${note.id}/pdf`);
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('content-type'), 'application/pdf');
  assert.equal(res.headers.get('content-disposition'), `inline; filename="${note.number}.pdf"`);
  const text = await textOf(res.bytes);
  assertIncludes(text, [
    'GUTSCHRIFT',
    note.number,
    'Gutschrift über 200,00 €',
    `Zu Rechnung ${invoice.number}`,
    `Betroffene Rechnung ${invoice.number}`,
    'Acme Cloud Ltd',
    '10115 Berlin',
    'EMPFÄNGER Jürgen Müller',
    'Ausstellungsdatum',
    'Produkt nicht zufriedenstellend',
    'Vom fälligen Betrag abgezogen 200,00 €',
    'Gesamt 200,00 €',
    'Notiz: Zwei Tage Ausfall',
  ]);
  // Nothing of the split that did not happen, nor an invoice's words.
  for (const absent of ['Erstattet', 'Kundenguthaben', 'Offener Betrag', 'Rechnungsdatum', 'RECHNUNG AN'])
    assert.ok(!text.includes(absent), absent);

  // The same note, the same bytes, whatever the clock says.
  app.clock.advance(3_600_000);
  assert.ok((await get(app, `/api/credit-notes/${note.id}/pdf`)).bytes.equals(res.bytes));

  // Voided, the note is stamped (its status in German) and the bytes change.
  assert.equal((await app.request('POST', `/api/credit-notes/${note.id}/void`)).status, 200);
  const voided = await get(app, `/api/credit-notes/${note.id}/pdf`);
  assert.equal(voided.status, 200);
  assertIncludes(await textOf(voided.bytes), ['STORNIERT']);
  assert.ok(!voided.bytes.equals(res.bytes));

  // Keys and ids: no key 401, unknown or malformed 404, never a PDF.
  assert.equal((await get(app, `/api/credit-notes/${note.id}/pdf`, null)).status, 401);
  for (const id of ['cn_01JD3Q7Z8X9Y0A1B2C3D4E5F6G', 'nope']) {
    const missing = await get(app, `/api/credit-notes/${id}/pdf`);
    assert.equal(missing.status, 404);
    assert.equal(JSON.parse(missing.bytes.toString()).code, 'not_found');
  }
});

test('a credit note on a paid invoice shows its lines and how it split, in the customer’s locale', async (t) => {
  const app = await buildTestApp(t, { env: ENV });
  const { subscriptionId, invoice } = await firstInvoice(app, 'en-GB', { amount: 1000000, currency: 'NGN' });
  assert.equal((await reportPayment(app, { subscriptionId, amount: 1000000, invoiceId: invoice.id })).status, 200);
  const line = invoice.lines.find((candidate) => candidate.kind === 'subscription')!;
  const issued = await app.request('POST', '/api/credit-notes', {
    body: {
      invoice_id: invoice.id,
      lines: [{ invoice_line_id: line.id, amount: 600000 }],
      credit_amount: 450000,
      out_of_band_amount: 150000,
    },
  });
  assert.equal(issued.status, 201, issued.text);
  const note = issued.body as { id: string; number: string; lines: { description: string }[] };

  const text = await textOf((await get(app, `/api/credit-notes/${note.id}/pdf`)).bytes);
  assertIncludes(text, [
    'CREDIT NOTE',
    note.number,
    `Invoice credited ${invoice.number}`,
    note.lines[0]!.description,
    'Credited to balance ₦4,500.00',
    'Returned out of band ₦1,500.00',
    'Total ₦6,000.00',
  ]);
  for (const absent of ['Taken off the amount due', 'Refunded', 'Reason']) assert.ok(!text.includes(absent), absent);
});
