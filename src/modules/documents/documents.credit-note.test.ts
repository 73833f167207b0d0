// The view of a credit note's document (SPEC §14 "Credit notes"), pure: the title in every
// language, the split (zero parts left out, refunds included), a note for an amount as one
// line, a void note stamped; its hosted page: one snapshot per language, the PDF link, and
// no Pay button.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { test } from 'node:test';
import { DOCUMENT_LANGUAGES } from '../../shared/locales.ts';
import type { CreditNote } from '../credit-notes/credit-notes.records.ts';
import { CREDIT_NOTE_STATUSES } from '../../db/tables/credit-notes.table.ts';
import { FULL_BUSINESS, FULL_CUSTOMER } from '../../../test/helpers/documents.ts';
import { renderCreditNotePage } from './documents.hosted-page.ts';
import { creditNoteDocument } from './documents.model.ts';
import { creditNoteView } from './documents.view.ts';

const NOTE: CreditNote = {
  id: 'cn_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
  number: 'CN-000007',
  invoice_id: 'inv_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
  customer_id: 'cus_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
  currency: 'EUR',
  amount: 10000,
  pre_payment_amount: 0,
  post_payment_amount: 10000,
  refund_amount: 3000,
  credit_amount: 5000,
  out_of_band_amount: 2000,
  reason: 'duplicate',
  memo: null,
  lines: [],
  refunds: [],
  balance_transaction_id: null,
  reversal_balance_transaction_id: null,
  status: 'issued',
  hosted_credit_note_url: 'https://billing.example.com/c/TOKEN',
  created_at: '2026-02-01T10:00:00.000Z',
  voided_at: null,
};
const BUSINESS = { businessName: 'Acme Cloud Ltd', businessAddress: null, businessTaxId: null };

function viewOf(note: CreditNote, locale: string) {
  const customer = { name: 'Ana', email: 'ana@example.com', preferred_locale: locale };
  return creditNoteView(creditNoteDocument(note, 'INV-000042', customer, BUSINESS));
}

test('every language has its title; the split lists the parts that are not zero, then the total', () => {
  const titles = DOCUMENT_LANGUAGES.map((language) => viewOf(NOTE, language).heading);
  assert.deepEqual(titles, ['Credit note', 'Avoir', 'Gutschrift', 'Nota de crédito', 'Nota de crédito']);
  const view = viewOf(NOTE, 'en-GB');
  assert.deepEqual(
    view.totals.map((row) => [row.label, row.amount]),
    [
      ['Refunded', '€30.00'],
      ['Credited to balance', '€50.00'],
      ['Returned out of band', '€20.00'],
      ['Total', '€100.00'],
    ],
  );
  // A note for an amount is one line; the meta names the invoice and the reason.
  assert.deepEqual(view.lines, [{ description: 'Credit', quantity: '', unitPrice: '', amount: '€100.00' }]);
  assert.deepEqual(view.meta[2], ['Invoice credited', 'INV-000042']);
  assert.deepEqual(view.meta[3], ['Reason', 'Duplicate']);
  assert.equal(view.stamp, null);
  assert.equal(view.notes.length, 0);
});

test('before payment: taken off the amount due; void: stamped; the memo is a note', () => {
  const note: CreditNote = {
    ...NOTE,
    pre_payment_amount: 10000,
    post_payment_amount: 0,
    refund_amount: 0,
    credit_amount: 0,
    out_of_band_amount: 0,
    reason: null,
    memo: 'Zwei Tage Ausfall',
    status: 'void',
    voided_at: '2026-02-02T10:00:00.000Z',
  };
  const view = viewOf(note, 'de');
  assert.deepEqual(
    // Intl puts a no-break space between amount and sign.
    view.totals.map((row) => [row.label, row.amount.replace(/\u00a0/g, ' ')]),
    [
      ['Vom fälligen Betrag abgezogen', '100,00 €'],
      ['Gesamt', '100,00 €'],
    ],
  );
  assert.equal(view.stamp, 'Storniert');
  // A credit note's words, not an invoice's ("Rechnungsdatum", "Rechnung an").
  assert.equal(view.buyer.heading, 'Empfänger');
  assert.equal(view.meta[1]![0], 'Ausstellungsdatum');
  assert.deepEqual(view.notes, ['Notiz: Zwei Tage Ausfall']);
  assert.ok(!view.meta.some(([term]) => term === 'Grund'), 'no reason, no row');
});

test('every language: the hosted page of a credit note with lines, a split and a memo matches its committed snapshot', () => {
  const note: CreditNote = {
    ...NOTE,
    pre_payment_amount: 2000,
    post_payment_amount: 8000,
    refund_amount: 3000,
    credit_amount: 5000,
    out_of_band_amount: 0,
    reason: 'product_unsatisfactory',
    memo: 'Two days of outage',
    lines: [
      {
        id: 'cnli_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
        invoice_line_id: 'il_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
        description: 'Pro (monthly) × 1, 15 Jan 2026 – 15 Feb 2026',
        amount: 10000,
      },
    ],
  };
  for (const language of DOCUMENT_LANGUAGES) {
    const html = renderCreditNotePage(
      creditNoteDocument(note, 'INV-000042', { ...FULL_CUSTOMER, preferred_locale: language }, FULL_BUSINESS),
    );
    // A credit note owes nothing: no form; its PDF is the hosted URL + `.pdf`.
    assert.ok(!html.includes('<form'), language);
    assert.ok(html.includes('<a class="download" href="https://billing.example.com/c/TOKEN.pdf">'), language);
    const snapshot = new URL(`./snapshots/credit-note.${language}.html`, import.meta.url);
    if (process.env.UPDATE_SNAPSHOTS === '1') writeFileSync(snapshot, html);
    assert.equal(html, readFileSync(snapshot, 'utf8'), language);
  }
});

test('every credit note status has a coloured badge on the hosted page', () => {
  for (const status of CREDIT_NOTE_STATUSES) {
    const html = renderCreditNotePage(
      creditNoteDocument({ ...NOTE, status }, 'INV-000042', FULL_CUSTOMER, FULL_BUSINESS),
    );
    assert.ok(html.includes(`<main class="sheet status-${status}">`), status);
    const css = /<style>([\s\S]*?)<\/style>/.exec(html)![1]!;
    assert.match(
      css,
      new RegExp(`\\.status-${status} \\.badge\\{background:#[0-9a-f]{6};color:#[0-9a-f]{6}\\}`),
      status,
    );
  }
});
