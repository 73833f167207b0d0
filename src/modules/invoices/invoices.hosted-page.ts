// The hosted invoice page (SPEC §9 "Hosted invoice page"): an invoice, its customer and the
// business name → one self-contained HTML document. Pure: no database, no clock, no I/O, so
// the same invoice always renders to the same bytes (a snapshot test holds them).
//
// The page runs nothing: no script, no external resource, no image; its one inline
// stylesheet is allowed by hash (HOSTED_PAGE_CSP). Its one form, the Pay button, is a plain
// POST to the page's own path + `/pay` (invoices.page.routes.ts), which answers 303 to the
// provider's checkout page. Every value that reaches the markup goes
// through `text()` (HTML-escaped, control characters replaced, bidi-isolated where it is
// user input), since customer names and line descriptions come from API clients.
import { createHash } from 'node:crypto';
import type { Invoice } from './invoices.schemas.ts';

/** Who the invoice is billed to, as the customers table holds them (name may be absent). */
export interface BilledTo {
  name: string | null;
  email: string;
}

/** The Pay button's form: where it posts (a path) and the provider's display name. */
export interface PayButton {
  action: string;
  provider: string;
}

/**
 * What the page shows: the invoice (API shape), its customer (undefined if missing) and
 * BUSINESS_NAME; `pay` when a provider can collect (the button shows only on an `open`
 * invoice with something remaining).
 */
export interface HostedInvoice {
  invoice: Invoice;
  customer: BilledTo | undefined;
  businessName: string;
  pay?: PayButton;
}

const STYLE = `
:root{color-scheme:light;--ink:#111827;--text:#374151;--muted:#6b7280;--rule:#e5e7eb;--paper:#fff;--desk:#eef0f3}
*{box-sizing:border-box}
html{background:var(--desk)}
body{margin:0;padding:48px 16px;color:var(--text);font:14px/1.55 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,"Noto Sans",sans-serif;-webkit-font-smoothing:antialiased;font-variant-numeric:tabular-nums}
.sheet{display:flex;flex-direction:column;max-width:800px;min-height:1060px;margin:0 auto;padding:56px 64px 40px;background:var(--paper);border-radius:6px;box-shadow:0 1px 2px rgba(17,24,39,.06),0 12px 32px rgba(17,24,39,.08)}
.sheet>:nth-last-child(2){margin-bottom:56px}
.sheet.short{min-height:0}
.sheet.short>header{margin-bottom:0}
header{display:flex;justify-content:space-between;align-items:flex-start;gap:32px;padding-bottom:28px;border-bottom:2px solid var(--ink)}
.business{margin:0;color:var(--ink);font-size:22px;font-weight:700;letter-spacing:-.01em;overflow-wrap:anywhere}
.title{text-align:right;flex:none}
h1{margin:0;color:var(--ink);font-size:30px;font-weight:300;letter-spacing:.08em;text-transform:uppercase;line-height:1.1}
.number{margin-top:6px;color:var(--muted);font-size:14px}
.badge{display:inline-block;margin-top:10px;padding:2px 10px;border-radius:999px;font-size:11px;font-weight:700;letter-spacing:.08em;text-transform:uppercase}
.status-open .badge{background:#dbeafe;color:#1e40af}
.status-paid .badge{background:#dcfce7;color:#166534}
.status-void .badge{background:#f3f4f6;color:#4b5563}
.status-uncollectible .badge{background:#fee2e2;color:#991b1b}
.headline{display:flex;justify-content:space-between;align-items:center;gap:24px;margin-top:32px}
.summary{margin:0;color:var(--ink);font-size:26px;font-weight:600;letter-spacing:-.01em}
.summary small{display:block;margin-top:2px;color:var(--muted);font-size:14px;font-weight:400;letter-spacing:0}
.meta{display:grid;grid-template-columns:minmax(0,1fr) auto;gap:32px 64px;margin:36px 0 40px}
h2{margin:0 0 8px;color:var(--muted);font-size:11px;font-weight:600;letter-spacing:.08em;text-transform:uppercase}
.party p{margin:0;overflow-wrap:anywhere}
.party .name{color:var(--ink);font-weight:600}
dl{display:grid;grid-template-columns:max-content 1fr;gap:6px 24px;margin:0}
dt{color:var(--muted)}
dd{margin:0;color:var(--ink);text-align:right;white-space:nowrap}
table{width:100%;border-collapse:collapse}
th{padding:0 0 10px;border-bottom:1px solid var(--ink);color:var(--muted);font-size:11px;font-weight:600;letter-spacing:.08em;text-align:left;text-transform:uppercase}
td{padding:14px 0;border-bottom:1px solid var(--rule);vertical-align:top;overflow-wrap:anywhere}
.lines td:first-child{color:var(--ink);padding-right:24px}
.num{width:1%;padding-left:24px;text-align:right;white-space:nowrap}
.totals{width:min(100%,340px);margin:24px 0 0 auto}
.totals th{padding:6px 0;border:0;color:var(--text);font-size:inherit;font-weight:400;letter-spacing:0;text-transform:none}
.totals td{padding:6px 0;border:0;color:var(--ink)}
.totals .remaining th,.totals .remaining td{padding-top:12px;border-top:2px solid var(--ink);color:var(--ink);font-size:16px;font-weight:700}
.note{margin:40px 0 0;padding:14px 18px;border-radius:6px;background:#f3f4f6;color:var(--text)}
.status-uncollectible .note{background:#fef2f2;color:#7f1d1d}
.status-void .totals td{color:var(--muted);text-decoration:line-through}
.pay{flex:none;margin:0;text-align:right}
.pay button{padding:12px 28px;border:0;border-radius:6px;background:var(--ink);color:#fff;font:inherit;font-size:16px;font-weight:600;cursor:pointer}
.pay button:hover{background:#1f2937}
.pay button:focus-visible{outline:3px solid #93c5fd;outline-offset:2px}
.pay small{display:block;margin-top:6px;color:var(--muted);font-size:12px}
.lost .back{display:inline-block;margin-top:24px;color:var(--ink);font-weight:600}
.stamp{flex:none;margin-right:8px;padding:4px 16px;border:4px solid;border-radius:8px;font-size:30px;font-weight:800;letter-spacing:.14em;line-height:1.15;text-transform:uppercase;transform:rotate(-8deg);opacity:.75}
.status-paid .stamp{color:#15803d}
.status-void .stamp{color:#6b7280}
.status-uncollectible .stamp{color:#b91c1c;font-size:20px}
footer{margin-top:auto;padding-top:16px;border-top:1px solid var(--rule);color:var(--muted);font-size:12px;display:flex;justify-content:space-between;gap:16px;flex-wrap:wrap}
.lost{padding:24px 0 8px}
.lost p{margin:16px 0 0;max-width:52ch}
@media (max-width:640px){body{padding:0}.sheet{min-height:0;padding:32px 20px;border-radius:0;box-shadow:none}header{flex-direction:column;gap:16px}.title{text-align:left}.headline{flex-direction:column;align-items:flex-start}.pay{text-align:left}.meta{grid-template-columns:1fr}dd{white-space:normal}}
@media print{@page{size:A4;margin:16mm}html,body{background:#fff}body{padding:0;font-size:12px}.pay{display:none}.sheet{max-width:none;min-height:0;padding:0;border-radius:0;box-shadow:none}*{-webkit-print-color-adjust:exact;print-color-adjust:exact}tr{break-inside:avoid}}
`.trim();

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
 * stylesheet (by hash); no script, image, font, frame or base URL; forms may post to the
 * page's own origin and be redirected to the providers' checkout pages (CHECKOUT_ORIGINS).
 */
export const HOSTED_PAGE_CSP = [
  "default-src 'none'",
  `style-src ${STYLE_HASH}`,
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
 * escaped, control characters replaced by U+FFFD.
 */
export function escapeHtml(value: string): string {
  return value.replace(CONTROL, '\ufffd').replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

/** User input as text, isolated from the surrounding text direction (a stray U+202E stays inside). */
function userText(value: string): string {
  return `<bdi>${escapeHtml(value)}</bdi>`;
}

const LOCALE = 'en-GB';
const numberFormats = new Map<string, Intl.NumberFormat | null>();

/** The currency's formatter (cached), or null when Intl does not accept the code. */
function currencyFormat(currency: string): Intl.NumberFormat | null {
  let format = numberFormats.get(currency);
  if (format === undefined) {
    try {
      format = new Intl.NumberFormat(LOCALE, { style: 'currency', currency, currencyDisplay: 'narrowSymbol' });
    } catch {
      format = null;
    }
    numberFormats.set(currency, format);
  }
  return format;
}

/**
 * `minor` (an integer amount in minor units of `currency`, ISO 4217) as money: the currency's
 * own number of decimals (2 for NGN and USD, 0 for JPY, 3 for KWD, as Intl knows them), exact
 * for any safe integer (the decimal is built as text, never divided as a float):
 * 500000 NGN → "₦5,000.00", 5000 JPY → "¥5,000", 1500 KWD → "KWD 1.500". A code Intl refuses
 * shows as "<amount with 2 decimals> <code>".
 */
export function formatMoney(minor: number, currency: string): string {
  const format = currencyFormat(currency);
  const digits = format ? format.resolvedOptions().maximumFractionDigits! : 2;
  const sign = minor < 0 ? '-' : '';
  const units = String(Math.abs(Math.trunc(minor))).padStart(digits + 1, '0');
  const whole = units.slice(0, units.length - digits);
  const decimal = digits === 0 ? whole : `${whole}.${units.slice(units.length - digits)}`;
  if (!format) return `${sign}${decimal} ${currency}`;
  return format.format(`${sign}${decimal}` as unknown as number);
}

const LONG_DATE = new Intl.DateTimeFormat(LOCALE, { day: 'numeric', month: 'long', year: 'numeric', timeZone: 'UTC' });
const SHORT_DATE = new Intl.DateTimeFormat(LOCALE, {
  day: 'numeric',
  month: 'short',
  year: 'numeric',
  timeZone: 'UTC',
});

/** An ISO 8601 instant as a UTC calendar date: "15 January 2026" (long) or "15 Jan 2026". */
function formatDate(iso: string, style: 'long' | 'short' = 'long'): string {
  return (style === 'long' ? LONG_DATE : SHORT_DATE).format(new Date(iso));
}

const STATUS_LABEL: Record<Invoice['status'], string> = {
  // Never rendered: an invoice never finalized has no hosted page (findInvoiceRowByToken).
  draft: 'Draft',
  open: 'Open',
  paid: 'Paid',
  void: 'Void',
  uncollectible: 'Uncollectible',
};

/** The big line under the header: what the reader owes, or why nothing is owed. */
function summary(invoice: Invoice): string {
  const remaining = formatMoney(invoice.amount_remaining, invoice.currency);
  switch (invoice.status) {
    case 'paid':
      return `${escapeHtml(formatMoney(invoice.amount_paid, invoice.currency))} paid${
        invoice.paid_at ? `<small>Paid on ${formatDate(invoice.paid_at)}. Thank you.</small>` : ''
      }`;
    case 'void':
      return `Nothing to pay<small>This invoice was voided${
        invoice.voided_at ? ` on ${formatDate(invoice.voided_at)}` : ''
      }.</small>`;
    case 'uncollectible':
      return `${escapeHtml(remaining)} outstanding<small>Was due ${formatDate(invoice.due_at)}.</small>`;
    case 'open':
    case 'draft':
      return `${escapeHtml(remaining)} due ${formatDate(invoice.due_at)}`;
  }
}

/** A note for the states that need one, or ''. */
function note(invoice: Invoice, businessName: string): string {
  switch (invoice.status) {
    case 'void':
      return `<p class="note">This invoice has been voided by ${userText(businessName)}. No payment is due on it.</p>`;
    case 'uncollectible':
      return `<p class="note">This invoice is overdue and has been marked uncollectible. Please contact ${userText(businessName)} to settle it.</p>`;
    default:
      return '';
  }
}

/**
 * The Pay button of an open invoice with something remaining when a provider can collect, or
 * '': a form without fields that posts to `pay.action`.
 */
function payButton(invoice: Invoice, pay: PayButton | undefined, remaining: string): string {
  if (!pay || invoice.status !== 'open' || invoice.amount_remaining <= 0) return '';
  return `<form class="pay" method="post" action="${escapeHtml(pay.action)}">
<button type="submit">Pay ${remaining}</button>
<small>Secure payment with ${escapeHtml(pay.provider)}</small>
</form>`;
}

/** The stamp across a settled or closed invoice, or ''. */
function stamp(status: Invoice['status']): string {
  return status === 'open' ? '' : `<div class="stamp" aria-hidden="true">${STATUS_LABEL[status]}</div>`;
}

/** The document around `body`: head (title, noindex, the stylesheet) and the sheet. */
function documentOf(title: string, sheetClass: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex, nofollow">
<meta name="referrer" content="no-referrer">
<title>${title}</title>
<style>${STYLE}</style>
</head>
<body>
<main class="${sheetClass}">
${body}
</main>
</body>
</html>
`;
}

/**
 * The row saying what credit notes took off the amount due (SPEC §14), before it; nothing
 * when none did, so an invoice without credit notes reads as before.
 */
function creditNotesRow(invoice: Invoice, money: (minor: number) => string): string {
  const credited = invoice.pre_payment_credit_notes_amount;
  return credited > 0 ? `<tr><th scope="row">Credit notes</th><td class="num">−${money(credited)}</td></tr>\n` : '';
}

/**
 * The hosted page of one invoice (SPEC §9): business name, "Invoice", number, status badge,
 * what is due (or paid, or why nothing is), the Pay button (see `pay`), billed-to, issue and
 * due dates, period, the lines (description, quantity, amount), totals (amount due, paid,
 * remaining) in the invoice's currency, and a PAID / VOID / UNCOLLECTIBLE stamp. Returns a
 * complete HTML document.
 */
export function renderInvoicePage({ invoice, customer, businessName, pay }: HostedInvoice): string {
  const money = (minor: number) => escapeHtml(formatMoney(minor, invoice.currency));
  const number = escapeHtml(invoice.number ?? '');
  const billedTo = customer
    ? [customer.name ? `<p class="name">${userText(customer.name)}</p>` : '', `<p>${userText(customer.email)}</p>`]
        .filter(Boolean)
        .join('\n')
    : '<p>—</p>';
  const lines = invoice.lines
    .map(
      (line) => `<tr>
<td>${userText(line.description)}</td>
<td class="num">${line.quantity}</td>
<td class="num">${money(line.amount)}</td>
</tr>`,
    )
    .join('\n');
  const meta: [string, string][] = [
    ['Invoice number', number],
    ['Date of issue', formatDate(invoice.created_at)],
    ['Date due', formatDate(invoice.due_at)],
    ['Period', `${formatDate(invoice.period_start, 'short')} – ${formatDate(invoice.period_end, 'short')}`],
    ['Currency', escapeHtml(invoice.currency)],
  ];
  const body = `<header>
<p class="business">${userText(businessName)}</p>
<div class="title">
<h1>Invoice</h1>
<div class="number">${number}</div>
<span class="badge">${STATUS_LABEL[invoice.status]}</span>
</div>
</header>
<div class="headline">
<p class="summary">${summary(invoice)}</p>
${payButton(invoice, pay, money(invoice.amount_remaining))}
${stamp(invoice.status)}
</div>
<section class="meta">
<div class="party">
<h2>Billed to</h2>
${billedTo}
</div>
<dl>
${meta.map(([term, value]) => `<dt>${term}</dt><dd>${value}</dd>`).join('\n')}
</dl>
</section>
<table class="lines">
<thead><tr><th scope="col">Description</th><th scope="col" class="num">Qty</th><th scope="col" class="num">Amount</th></tr></thead>
<tbody>
${lines}
</tbody>
</table>
<table class="totals">
<tbody>
${creditNotesRow(invoice, money)}<tr><th scope="row">Amount due</th><td class="num">${money(invoice.amount_due)}</td></tr>
<tr><th scope="row">Amount paid</th><td class="num">${money(invoice.amount_paid)}</td></tr>
<tr class="remaining"><th scope="row">Amount remaining</th><td class="num">${money(invoice.amount_remaining)}</td></tr>
</tbody>
</table>
${invoice.reverse_charge ? '<p class="reverse-charge">Reverse charge</p>' : ''}
${note(invoice, businessName)}
<footer><span>${number} · ${money(invoice.amount_due)} · ${STATUS_LABEL[invoice.status]}</span><span>${userText(businessName)}</span></footer>`;
  return documentOf(
    `Invoice ${number} · ${escapeHtml(businessName)}`,
    `sheet status-${invoice.status}`,
    body.replace(/\n{2,}/g, '\n'),
  );
}

/**
 * Why a page cannot be shown: the 404 for any unknown or malformed token, 429, 500, and 503
 * when the Pay button's provider gave no usable answer (or refused).
 */
export type HostedPageProblem = 404 | 429 | 500 | 503;

const PROBLEMS: Record<HostedPageProblem, { title: string; text: string }> = {
  404: {
    title: 'Invoice not found',
    text: 'This invoice link is not valid. Check that you copied the whole link from your email, or ask the sender for a new one.',
  },
  429: {
    title: 'Too many requests',
    text: 'This page was requested too often from your network. Please wait a minute and try again.',
  },
  500: {
    title: 'Invoice unavailable',
    text: 'This invoice cannot be shown right now. Please try again in a few minutes.',
  },
  503: {
    title: 'Payment not started',
    text: 'The payment provider could not be reached, so your payment was not started and nothing was charged. Please try again in a few minutes.',
  },
};

/**
 * The page for `problem` in the invoice page's style: the same for every unknown or malformed
 * token (it never says whether an invoice exists), naming only the business. `backTo`: the
 * path of the invoice page to link back to (the 503 of a Pay button), none by default.
 */
export function renderProblemPage(problem: HostedPageProblem, businessName: string, backTo?: string): string {
  const { title, text } = PROBLEMS[problem];
  const back = backTo === undefined ? '' : `\n<a class="back" href="${escapeHtml(backTo)}">Back to the invoice</a>`;
  return documentOf(
    `${title} · ${escapeHtml(businessName)}`,
    'sheet short',
    `<header>
<p class="business">${userText(businessName)}</p>
<div class="title"><h1>Invoice</h1></div>
</header>
<section class="lost">
<p class="summary">${title}</p>
<p>${text}</p>${back}
</section>`,
  );
}

/**
 * The page answering a Pay button whose checkout `url` (an absolute http(s) URL) is not on
 * CHECKOUT_ORIGINS, where the browser would refuse the 303 (`form-action`): a link to it
 * instead (links are not restricted by the CSP), naming the provider and the business.
 */
export function renderContinuePage(url: string, provider: string, businessName: string): string {
  return documentOf(
    `Continue to payment · ${escapeHtml(businessName)}`,
    'sheet short',
    `<header>
<p class="business">${userText(businessName)}</p>
<div class="title"><h1>Invoice</h1></div>
</header>
<section class="lost">
<p class="summary">Continue to payment</p>
<p>Your payment page at ${escapeHtml(provider)} is ready.</p>
<a class="back" href="${escapeHtml(url)}" rel="noreferrer">Continue to ${escapeHtml(provider)}</a>
</section>`,
  );
}
