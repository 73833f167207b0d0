// An invoice document (documents.model.ts) → its view: every string the hosted page and the
// PDF print, in the document's language (documents.messages.ts), money and dates formatted
// by Intl (documents.format.ts). Pure. The renderers only lay the view out, so the page and
// the PDF show the same content (SPEC §14 "Documents").
import type { CreditNoteStatus } from '../../db/tables/credit-notes.table.ts';
import type { InvoiceStatus } from '../invoices/invoices.status.ts';
import type { Invoice, InvoiceLine } from '../invoices/invoices.schemas.ts';
import { formatDate, formatInteger, formatMoney, formatPercent } from './documents.format.ts';
import { MESSAGES, type Messages } from './documents.messages.ts';
import type { Buyer, CreditNoteDocument, InvoiceDocument, PostalAddress, Seller } from './documents.model.ts';

/** A party block: heading, name (may be absent) and further lines (address, email, tax ids). */
export interface PartyView {
  heading: string;
  name: string | null;
  lines: string[];
  /** The seller's logo: its bytes (the PDF embeds them) and a `data:` URI of them (the page inlines it). */
  logo?: { bytes: Buffer; src: string };
}

/** One row of the totals: label and formatted amount; `emphasis` for the total and what remains. */
export interface TotalView {
  label: string;
  amount: string;
  emphasis?: 'total' | 'remaining';
}

/** What the renderers print. Text is plain (renderers escape); `isolate`d user text sits in sentences. */
export interface DocumentView {
  /** The BCP 47 tag of the text and formats (`<html lang>`). */
  lang: string;
  /** The invoice's status, or the credit note's (`issued`, `void`). */
  status: InvoiceStatus | CreditNoteStatus;
  heading: string;
  number: string;
  statusLabel: string;
  title: string;
  summary: { headline: string; detail: string | null };
  seller: PartyView;
  buyer: PartyView;
  meta: [string, string][];
  columns: { description: string; quantity: string; unitPrice: string; amount: string };
  lines: { description: string; quantity: string; unitPrice: string; amount: string }[];
  totals: TotalView[];
  notes: string[];
  pay: { action: string; label: string; provider: string } | null;
  /**
   * The page's link to its PDF (`<hosted_invoice_url>.pdf`, `<hosted_credit_note_url>.pdf`),
   * null without a hosted URL (a draft). The PDF does not print it.
   */
  pdfLink: { href: string; label: string } | null;
  /** The stamp across a document that is not `open` (Paid, Void, Draft …), else null. */
  stamp: string | null;
  footer: string;
  messages: Messages;
}

/**
 * User text inside a sentence, isolated from its direction (U+2068 … U+2069, what `<bdi>`
 * does for a whole element): a stray U+202E in a business name stays inside it.
 */
export function isolate(text: string): string {
  return `\u2068${text}\u2069`;
}

/** Lines that bill (not discounts or taxes, which are totals rows). */
const BILLED_KINDS: ReadonlySet<InvoiceLine['kind']> = new Set(['subscription', 'proration', 'usage', 'adjustment']);

function addressOf(address: PostalAddress | null | undefined): string[] {
  if (!address) return [];
  const cityLine = [address.postal_code, address.city].filter(Boolean).join(' ');
  return [address.line1, address.line2, cityLine, address.state, address.country].filter(
    (line): line is string => typeof line === 'string' && line.length > 0,
  );
}

function sellerView(seller: Seller, m: Messages): PartyView {
  return {
    heading: m.from,
    name: seller.name,
    lines: [...seller.addressLines, ...(seller.taxId ? [m.labelled(m.taxId, seller.taxId)] : [])],
    ...(seller.logo
      ? {
          logo: {
            bytes: seller.logo.bytes,
            src: `data:${seller.logo.mediaType};base64,${seller.logo.bytes.toString('base64')}`,
          },
        }
      : {}),
  };
}

function buyerView(buyer: Buyer | undefined, m: Messages): PartyView {
  if (!buyer) return { heading: m.billedTo, name: null, lines: ['—'] };
  return {
    heading: m.billedTo,
    name: buyer.name,
    lines: [
      ...addressOf(buyer.address),
      buyer.email,
      ...(buyer.taxIds ?? []).map((taxId) => m.labelled(m.taxId, taxId.value)),
    ],
  };
}

function summaryOf(invoice: Invoice, m: Messages, money: (minor: number) => string, date: (iso: string) => string) {
  switch (invoice.status) {
    case 'paid':
      return {
        headline: m.paidAmount(money(invoice.amount_paid)),
        detail: invoice.paid_at ? m.paidOn(date(invoice.paid_at)) : null,
      };
    case 'void':
      return { headline: m.nothingToPay, detail: m.voided(invoice.voided_at ? date(invoice.voided_at) : null) };
    case 'uncollectible':
      return { headline: m.outstanding(money(invoice.amount_remaining)), detail: m.wasDue(date(invoice.due_at)) };
    case 'open':
    case 'draft':
      return { headline: m.dueOn(money(invoice.amount_remaining), date(invoice.due_at)), detail: null };
  }
}

/**
 * The totals: subtotal, discounts, taxes (by rate, or reverse charge), total, credit applied,
 * credit notes before payment, due, paid, remaining.
 */
function totalsOf(document: InvoiceDocument, m: Messages, money: (minor: number) => string): TotalView[] {
  const { invoice, locale } = document;
  const rows: TotalView[] = [{ label: m.subtotal, amount: money(invoice.subtotal) }];
  for (const line of invoice.lines) {
    if (line.kind === 'discount')
      rows.push({ label: m.labelled(m.discount, isolate(line.description)), amount: money(line.amount) });
  }
  if (document.reverseCharge) {
    rows.push({ label: m.reverseCharge, amount: money(0) });
  } else if (document.taxes) {
    for (const tax of document.taxes) {
      rows.push({
        label: m.taxRate(isolate(tax.name), formatPercent(tax.percentage, locale.tag), tax.inclusive),
        amount: money(tax.amount),
      });
    }
  } else {
    for (const line of invoice.lines) {
      if (line.kind === 'tax') rows.push({ label: isolate(line.description), amount: money(line.amount) });
    }
  }
  rows.push({ label: m.total, amount: money(invoice.total), emphasis: 'total' });
  if (invoice.applied_balance > 0) rows.push({ label: m.creditApplied, amount: money(-invoice.applied_balance) });
  // What credit notes took off while the invoice was unpaid (SPEC §14); none: no row.
  const credited = invoice.pre_payment_credit_notes_amount;
  if (credited > 0) rows.push({ label: m.creditNotes, amount: money(-credited) });
  rows.push(
    { label: m.amountDue, amount: money(invoice.amount_due) },
    { label: m.amountPaid, amount: money(invoice.amount_paid) },
    { label: m.amountRemaining, amount: money(invoice.amount_remaining), emphasis: 'remaining' },
  );
  return rows;
}

/**
 * The view of `document`: every word from the catalogue of its locale's language, money in
 * the invoice's currency and dates in UTC formatted for its tag. Deterministic: the same
 * document gives the same view.
 */
export function invoiceView(document: InvoiceDocument): DocumentView {
  const { invoice, seller, locale } = document;
  const m = MESSAGES[locale.language];
  const money = (minor: number) => formatMoney(minor, invoice.currency, locale.tag);
  const date = (iso: string) => formatDate(iso, locale.tag);
  const short = (iso: string) => formatDate(iso, locale.tag, 'short');
  const number = invoice.number ?? '';
  const statusLabel = m.status[invoice.status];
  const notes: string[] = [];
  if (invoice.status === 'draft') notes.push(m.draftNote);
  if (invoice.status === 'void') notes.push(m.voidNote(isolate(seller.name)));
  if (invoice.status === 'uncollectible') notes.push(m.uncollectibleNote(isolate(seller.name)));
  if (document.reverseCharge) notes.push(m.reverseChargeNote);
  const pay = document.pay;
  return {
    lang: locale.tag,
    status: invoice.status,
    heading: m.invoice,
    number,
    statusLabel,
    title: `${m.invoice} ${number} · ${seller.name}`,
    summary: summaryOf(invoice, m, money, date),
    seller: sellerView(seller, m),
    buyer: buyerView(document.buyer, m),
    meta: [
      [m.invoiceNumber, number],
      [m.dateOfIssue, date(invoice.created_at)],
      [m.dateDue, date(invoice.due_at)],
      [m.period, `${short(invoice.period_start)} – ${short(invoice.period_end)}`],
      [m.currency, invoice.currency],
    ],
    columns: { description: m.description, quantity: m.quantity, unitPrice: m.unitPrice, amount: m.amount },
    lines: invoice.lines
      .filter((line) => BILLED_KINDS.has(line.kind))
      .map((line) => ({
        description: line.description,
        quantity: formatInteger(line.quantity, locale.tag),
        unitPrice: line.unit_amount === null ? '' : money(line.unit_amount),
        amount: money(line.amount),
      })),
    totals: totalsOf(document, m, money),
    notes,
    pay:
      pay && invoice.status === 'open' && invoice.amount_remaining > 0
        ? { action: pay.action, label: m.pay(money(invoice.amount_remaining)), provider: m.payWith(pay.provider) }
        : null,
    pdfLink: invoice.hosted_invoice_url ? { href: `${invoice.hosted_invoice_url}.pdf`, label: m.downloadPdf } : null,
    stamp: invoice.status === 'open' ? null : statusLabel,
    footer: `${number} · ${money(invoice.amount_due)} · ${statusLabel}`,
    messages: m,
  };
}

/**
 * The view of a credit note's document (SPEC §14 "Credit notes"), laid out as an invoice's:
 * "Credit note", its number and status; the credit and the invoice it credits; seller and
 * buyer; number, date, invoice, reason and currency; the credited invoice lines (or one line
 * for a note issued for an amount); how the amount splits (taken off the amount due,
 * refunded, credited to the balance, out of band; a part of zero is left out) and the total;
 * the memo as a note; the hosted page's link to its PDF. Deterministic, like invoiceView.
 */
export function creditNoteView(document: CreditNoteDocument): DocumentView {
  const { creditNote: note, seller, locale } = document;
  const m = MESSAGES[locale.language];
  const c = m.creditNote;
  const money = (minor: number) => formatMoney(minor, note.currency, locale.tag);
  const invoiceNumber = document.invoiceNumber ?? note.invoice_id;
  const statusLabel = c.status[note.status];
  const split: [string, number][] = [
    [c.prePayment, note.pre_payment_amount],
    [c.refund, note.refund_amount],
    [c.credit, note.credit_amount],
    [c.outOfBand, note.out_of_band_amount],
  ];
  const lines =
    note.lines.length > 0
      ? note.lines.map((line) => ({ description: line.description, amount: line.amount }))
      : [{ description: c.amountLine, amount: note.amount }];
  return {
    lang: locale.tag,
    status: note.status,
    heading: c.title,
    number: note.number,
    statusLabel,
    title: `${c.title} ${note.number} · ${seller.name}`,
    summary: { headline: c.credited(money(note.amount)), detail: c.forInvoice(invoiceNumber) },
    seller: sellerView(seller, m),
    buyer: { ...buyerView(document.buyer, m), heading: c.to },
    meta: [
      [c.number, note.number],
      [c.date, formatDate(note.created_at, locale.tag)],
      [c.invoice, invoiceNumber],
      ...(note.reason ? [[c.reason, c.reasons[note.reason]] as [string, string]] : []),
      [m.currency, note.currency],
    ],
    // A credited line has no quantity or unit price of its own: those columns stay blank.
    columns: { description: m.description, quantity: '', unitPrice: '', amount: m.amount },
    lines: lines.map((line) => ({
      description: line.description,
      quantity: '',
      unitPrice: '',
      amount: money(line.amount),
    })),
    totals: [
      ...split.filter(([, amount]) => amount > 0).map(([label, amount]) => ({ label, amount: money(amount) })),
      { label: m.total, amount: money(note.amount), emphasis: 'total' as const },
    ],
    notes: note.memo ? [m.labelled(c.memo, note.memo)] : [],
    pay: null,
    pdfLink: { href: `${note.hosted_credit_note_url}.pdf`, label: m.downloadPdf },
    stamp: note.status === 'void' ? statusLabel : null,
    footer: `${note.number} · ${money(note.amount)} · ${statusLabel}`,
    messages: m,
  };
}
