// The invoice PDF (pure): its text, extracted with a PDF library (unpdf, pdf.js), shows the
// totals in the customer's format and language; the same invoice gives the same bytes;
// characters the embedded font cannot print (CJK, emoji, controls, direction overrides)
// never break it; a draft is marked; long invoices go on to more pages.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { extractText, getDocumentProxy, getMeta } from 'unpdf';
import { fullInvoice, FULL_BUSINESS, FULL_CUSTOMER, FULL_TAXES, TINY_PNG } from '../../../test/helpers/documents.ts';
import type { DocumentCustomer } from './documents.model.ts';
import { invoiceDocument } from './documents.model.ts';
import type { Invoice } from '../invoices/invoices.schemas.ts';
import { printable, renderInvoicePdf } from './documents.pdf.ts';

/** The PDF's text, pages joined, with no-break spaces as spaces; its page count and info. */
async function textOf(pdf: Buffer) {
  assert.equal(pdf.subarray(0, 5).toString('latin1'), '%PDF-');
  const proxy = await getDocumentProxy(new Uint8Array(pdf));
  const { totalPages, text } = await extractText(proxy, { mergePages: true });
  const { info } = await getMeta(proxy);
  return { pages: totalPages, text: text.replace(/[\u00a0\u202f]/g, ' '), info: info as Record<string, unknown> };
}

function render(invoice: Partial<Invoice> = {}, customer: Partial<DocumentCustomer> = {}) {
  return renderInvoicePdf(
    invoiceDocument(fullInvoice(invoice), { ...FULL_CUSTOMER, ...customer }, FULL_BUSINESS, { taxes: FULL_TAXES }),
  );
}

test('a German customer’s PDF says Rechnung and shows every total as "1.702,80 €", with both parties and taxes by rate', async () => {
  const { text, pages, info } = await textOf(await render({}, { preferred_locale: 'de' }));
  assert.equal(pages, 1);
  for (const expected of [
    'RECHNUNG',
    'INV-000042',
    'Acme Cloud Ltd',
    '1 Main Street',
    'Steuer-ID: IE1234567T',
    'RECHNUNG AN',
    'Jürgen Müller GmbH',
    'Hauptstraße 5',
    '10115 Berlin',
    'buchhaltung@mueller.example',
    'Steuer-ID: DE123456789',
    'Fällig am 22. Januar 2026',
    'Extra seats 2 50,00 € 100,00 €',
    'Zwischensumme 1.600,00 €',
    'Rabatt: WELCOME10 (10 % off) -160,00 €',
    'VAT 19 % 256,50 €',
    'VAT 7 % 6,30 €',
    'Gesamt 1.702,80 €',
    'Angerechnetes Guthaben -2,80 €',
    'Fälliger Betrag 1.700,00 €',
    'Offener Betrag 1.700,00 €',
    'Seite 1 von 1',
  ]) {
    assert.ok(text.includes(expected), `${expected} in:\n${text}`);
  }
  assert.equal(info.Title, 'Rechnung INV-000042 · Acme Cloud Ltd');
  assert.equal(info.Language, 'de');
  assert.equal(info.CreationDate, 'D:20260115100000Z');
});

test('each language prints its own words and number format', async () => {
  const expectations: Record<string, string[]> = {
    en: ['INVOICE', 'Total €1,702.80', 'Amount remaining €1,700.00', '€1,700.00 due 22 January 2026', 'Page 1 of 1'],
    fr: ['FACTURE', 'Total 1 702,80 €', 'Reste à payer 1 700,00 €', 'Identifiant fiscal : DE123456789'],
    es: ['FACTURA', 'Total 1702,80 €', 'Importe pendiente 1700,00 €', 'Página 1 de 1'],
    pt: ['FATURA', 'Total 1702,80 €', 'Valor em dívida 1700,00 €', 'Página 1 de 1'],
    'pt-BR': ['FATURA', 'Total € 1.702,80'],
  };
  for (const [preferred_locale, expected] of Object.entries(expectations)) {
    const { text } = await textOf(await render({}, { preferred_locale }));
    for (const part of expected) assert.ok(text.includes(part), `${preferred_locale}: ${part} in:\n${text}`);
  }
});

test('JPY and KWD amounts keep their own decimals in the PDF', async () => {
  const yen = fullInvoice({ currency: 'JPY', lines: [{ ...fullInvoice().lines[0]!, currency: 'JPY' }] });
  const { text } = await textOf(await render({ ...yen, amount_remaining: 150000 }, { preferred_locale: 'en' }));
  assert.ok(text.includes('¥150,000'), text);
  const dinar = await textOf(await render({ currency: 'KWD', amount_remaining: 1500 }, { preferred_locale: 'de' }));
  assert.ok(dinar.text.includes('1,500 KWD'), dinar.text);
});

test('the same invoice gives the same bytes; dates and file id come from the invoice, not the clock', async () => {
  const first = await render();
  const second = await render();
  assert.ok(first.equals(second));
  const other = await render({ created_at: '2026-02-01T00:00:00.000Z' });
  assert.ok(!other.equals(first));
  assert.equal((await textOf(other)).info.CreationDate, 'D:20260201000000Z');
});

test('a draft is marked DRAFT with its note; a paid invoice is stamped PAID', async () => {
  const draft = await textOf(
    await render({ status: 'draft', number: null, hosted_invoice_url: null }, { preferred_locale: 'en' }),
  );
  assert.ok(draft.text.includes('DRAFT'), draft.text);
  assert.ok(draft.text.includes('This is a draft: it is not final and cannot be paid yet.'), draft.text);
  const paid = await textOf(
    await render(
      { status: 'paid', amount_paid: 170000, amount_remaining: 0, paid_at: '2026-01-20T08:00:00.000Z' },
      { preferred_locale: 'en' },
    ),
  );
  assert.ok(paid.text.includes('PAID'), paid.text);
  assert.ok(paid.text.includes('Paid on 20 January 2026. Thank you.'), paid.text);
});

test('a reverse-charge document prints "Reverse charge" instead of taxes', async () => {
  const pdf = await renderInvoicePdf(
    invoiceDocument(
      fullInvoice({ lines: fullInvoice().lines.filter((line) => line.kind !== 'tax') }),
      { ...FULL_CUSTOMER, preferred_locale: 'en' },
      FULL_BUSINESS,
      { reverseCharge: true },
    ),
  );
  const { text } = await textOf(pdf);
  assert.ok(text.includes('Reverse charge €0.00'), text);
  assert.ok(text.includes('Reverse charge: VAT is to be accounted for by the customer.'), text);
  assert.ok(!text.includes('VAT 19'), text);
});

test('characters the font lacks print as U+FFFD; controls and direction overrides never reach the page', async () => {
  assert.equal(printable('Ωμέγα Привет Łódź'), 'Ωμέγα Привет Łódź');
  assert.equal(printable('山田 🎉'), '\ufffd\ufffd \ufffd');
  assert.equal(printable('a\u202eb\u2068c\u2069\u0007d'), 'abc\ufffdd');
  const { text } = await textOf(
    await render({}, { name: '山田 太郎 🎉 Ωμέγα \u202eevil', email: 'x@example.com', preferred_locale: 'en' }),
  );
  assert.ok(text.includes('\ufffd\ufffd \ufffd\ufffd \ufffd Ωμέγα evil'), text);
});

test('a long invoice goes on to more pages, the table header and "Page n of m" on each', async () => {
  const base = fullInvoice();
  const extra = Array.from({ length: 45 }, (_, i) => ({ ...base.lines[1]!, id: `il_x${i}`, description: `Seat ${i}` }));
  const { text, pages } = await textOf(await render({ lines: [...base.lines, ...extra] }, { preferred_locale: 'en' }));
  assert.ok(pages >= 2, String(pages));
  assert.ok(text.includes(`Page ${pages} of ${pages}`), text);
  assert.equal(text.match(/DESCRIPTION QTY UNIT PRICE AMOUNT/g)?.length, pages);
  assert.ok(text.includes('Seat 44 2 €50.00 €100.00'), text);
});

test('property: any text in names, descriptions and addresses renders to a readable PDF without throwing', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.string({ unit: 'binary', maxLength: 40 }),
      fc.string({ unit: 'grapheme', maxLength: 40 }),
      async (name, description) => {
        const base = fullInvoice();
        const pdf = await render(
          { lines: [{ ...base.lines[0]!, description }, ...base.lines.slice(1)] },
          { name, address: { line1: description, city: name }, preferred_locale: 'en' },
        );
        const { text } = await textOf(pdf);
        assert.ok(text.includes('Total €1,702.80'));
      },
    ),
    { numRuns: 15 },
  );
});

test('the seller’s logo (BUSINESS_LOGO_PATH) is embedded as an image above the seller’s name; without one, no image', async () => {
  const images = (pdf: Buffer) => pdf.toString('latin1').match(/\/Subtype \/Image/g)?.length ?? 0;
  const document = (logo: boolean) =>
    invoiceDocument(fullInvoice(), FULL_CUSTOMER, {
      ...FULL_BUSINESS,
      ...(logo ? { businessLogo: { bytes: TINY_PNG, mediaType: 'image/png' as const } } : {}),
    });
  const plain = await renderInvoicePdf(document(false));
  const withLogo = await renderInvoicePdf(document(true));
  assert.equal(images(plain), 0);
  assert.ok(images(withLogo) >= 1, 'an image XObject (and its alpha mask)');
  const text = (await extractText(await getDocumentProxy(new Uint8Array(withLogo)), { mergePages: true })).text;
  assert.match(text, /Acme Cloud Ltd/, 'the name is still printed');
  assert.deepEqual(await renderInvoicePdf(document(true)), withLogo, 'still the same bytes each time');
});
