// The hosted invoice page (SPEC §9 "Hosted invoice page", §14 "Documents"): an invoice
// document → one self-contained HTML document, from Eta templates (templates/*.eta) with
// auto-escaping: every `<%= %>` goes through escapeHtml, so customer names and line
// descriptions (from API clients) are text, never markup. Words and formats come from the
// view (documents.view.ts) in the customer's locale. Pure but for reading the templates and
// the stylesheet once: the same document always renders to the same bytes (snapshots hold them).
//
// The page runs nothing: no script, no external resource; its one image, the seller's logo
// (BUSINESS_LOGO_PATH), is inlined as a `data:` URI, and its one inline stylesheet
// (templates/hosted-page.css) is allowed by hash (HOSTED_PAGE_CSP). Its one form,
// the Pay button, is a plain POST to the page's own path + `/pay` (invoices.page.routes.ts),
// which answers 303 to the provider's checkout page.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Eta } from 'eta';
import type { DocumentLanguage } from '../../shared/locales.ts';
import { MESSAGES } from './documents.messages.ts';
import type { CreditNoteDocument, InvoiceDocument } from './documents.model.ts';
import { creditNoteView, invoiceView } from './documents.view.ts';

const TEMPLATES = new URL('./templates/', import.meta.url);
const STYLE = readFileSync(new URL('hosted-page.css', TEMPLATES), 'utf8').trim();

/** `'sha256-…'`: the CSP source that allows the page's one inline stylesheet. */
const STYLE_HASH = `'sha256-${createHash('sha256').update(STYLE).digest('base64')}'`;

/**
 * The origins of the providers' checkout pages (`authorization_url`, Checkout Session `url`).
 * The Pay button's POST is answered 303 to one of them, and browsers check `form-action`
 * against every URL a form submission is redirected to (Chrome does), so the CSP lists them.
 */
export const CHECKOUT_ORIGINS = ['https://checkout.paystack.com', 'https://checkout.stripe.com'] as const;

/**
 * The Content-Security-Policy of every hosted page: nothing loads or runs but the page's own
 * stylesheet (by hash) and `data:` images (the inlined logo: nothing is fetched); no script,
 * font, frame or base URL; forms may post to the
 * page's own origin and be redirected to the providers' checkout pages (CHECKOUT_ORIGINS).
 */
export const HOSTED_PAGE_CSP = [
  "default-src 'none'",
  `style-src ${STYLE_HASH}`,
  'img-src data:',
  "base-uri 'none'",
  `form-action 'self' ${CHECKOUT_ORIGINS.join(' ')}`,
  "frame-ancestors 'none'",
].join('; ');

// C0 and C1 controls other than tab and line feed: never meaningful in a name or description.
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;
const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/**
 * `value` as HTML text safe in element content and in quoted attributes: `& < > " '`
 * escaped, control characters replaced by U+FFFD. The templates' auto-escape.
 */
export function escapeHtml(value: string): string {
  return value.replace(CONTROL, '\ufffd').replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

// Eta compiles each template once to a function (cache) and escapes every `<%= %>` with
// escapeHtml; `<%~ %>` (raw) is used only for the layout's body and the hashed stylesheet.
const eta = new Eta({
  views: fileURLToPath(TEMPLATES),
  autoEscape: true,
  escapeFunction: (value: unknown) => escapeHtml(String(value)),
  autoTrim: false,
  cache: true,
});

/**
 * The hosted page of one invoice document (SPEC §9, §14): seller, "Invoice", number, status
 * badge, what is due (or paid, or why nothing is), the Pay button (`document.pay`, on an open
 * invoice with something remaining), seller and buyer with addresses and tax ids, issue and
 * due dates, period, the lines (description, quantity, unit price, amount), the totals
 * (subtotal, discounts, taxes by rate, total, credit applied, due, paid, remaining) in the
 * invoice's currency, notes, and a PAID / VOID / UNCOLLECTIBLE / DRAFT stamp, all in the
 * document's locale. Returns a complete HTML document.
 */
export function renderInvoicePage(document: InvoiceDocument): string {
  return eta.render('./invoice', { view: invoiceView(document), style: STYLE });
}

/**
 * The hosted page of one credit note document (SPEC §14 "Credit notes"), laid out as an
 * invoice's page by the same template: seller, "Credit note", number, status badge, what it
 * credits and for which invoice, seller and buyer, date, reason, the credited lines, how the
 * amount splits and its total, the memo, the link to its PDF and a VOID stamp once voided, in
 * the document's locale. No Pay button: nothing is owed. Returns a complete HTML document.
 */
export function renderCreditNotePage(document: CreditNoteDocument): string {
  return eta.render('./invoice', { view: creditNoteView(document), style: STYLE });
}

/**
 * Why a page cannot be shown: the 404 for any unknown or malformed token, 429, 500, and 503
 * when the Pay button's provider gave no usable answer (or refused).
 */
export type HostedPageProblem = 404 | 429 | 500 | 503;

/**
 * The page for `problem` in the invoice page's style, in `language` (default `en`: a 404
 * knows no customer): the same for every unknown or malformed token (it never says whether
 * an invoice exists), naming only the business. `backTo`: the path of the invoice page to
 * link back to (the 503 of a Pay button), none by default.
 */
export function renderProblemPage(
  problem: HostedPageProblem,
  businessName: string,
  backTo?: string,
  language: DocumentLanguage = 'en',
): string {
  const m = MESSAGES[language];
  const { title, text } = m.problems[problem];
  const link = backTo === undefined ? null : { href: backTo, text: m.backToInvoice, external: false };
  return eta.render('./problem', { lang: language, heading: m.invoice, title, text, businessName, link, style: STYLE });
}

/**
 * The page for `problem` under the hosted credit note pages (`/c`), in `language` (default
 * `en`: a 404 knows no customer): "Credit note" as heading, the same words for every unknown
 * or malformed token (it never says whether a note exists), naming only the business. A 429
 * says what the invoice pages' says.
 */
export function renderCreditNoteProblemPage(
  problem: 404 | 429 | 500,
  businessName: string,
  language: DocumentLanguage = 'en',
): string {
  const m = MESSAGES[language];
  const { title, text } = problem === 429 ? m.problems[429] : m.creditNote.problems[problem];
  return eta.render('./problem', {
    lang: language,
    heading: m.creditNote.title,
    title,
    text,
    businessName,
    link: null,
    style: STYLE,
  });
}

/**
 * The page answering a Pay button whose checkout `url` (an absolute http(s) URL) is not on
 * CHECKOUT_ORIGINS, where the browser would refuse the 303 (`form-action`): a link to it
 * instead (links are not restricted by the CSP), naming the provider and the business, in
 * `language`.
 */
export function renderContinuePage(
  url: string,
  provider: string,
  businessName: string,
  language: DocumentLanguage = 'en',
): string {
  const m = MESSAGES[language];
  return eta.render('./problem', {
    lang: language,
    heading: m.invoice,
    title: m.continueTitle,
    text: m.continueText(provider),
    businessName,
    link: { href: url, text: m.continueTo(provider), external: true },
    style: STYLE,
  });
}
