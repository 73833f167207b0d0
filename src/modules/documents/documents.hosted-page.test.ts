// The hosted page renderer (pure): escaping of every value (a property over arbitrary text),
// the stylesheet's hash in the CSP, the stamps, and one snapshot per language of a document
// with everything a document can show (seller and buyer details, discount, taxes by rate,
// credit applied).
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import fc from 'fast-check';
import { readFileSync, writeFileSync } from 'node:fs';
import { DOCUMENT_LANGUAGES } from '../../shared/locales.ts';
import type { Invoice } from '../invoices/invoices.schemas.ts';
import {
  escapeHtml,
  HOSTED_PAGE_CSP,
  renderInvoicePage,
  renderContinuePage,
  renderProblemPage,
} from './documents.hosted-page.ts';
import { type BusinessDetails, type DocumentCustomer, invoiceDocument, type PayButton } from './documents.model.ts';
import { fullInvoice, FULL_BUSINESS, FULL_CUSTOMER, FULL_TAXES, TINY_PNG } from '../../../test/helpers/documents.ts';

/** A fixed invoice: two lines, NGN, open, partly paid. */
function invoice(overrides: Partial<Invoice> = {}): Invoice {
  const line: Invoice['lines'][number] = {
    id: 'il_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
    kind: 'subscription',
    description: 'Pro (monthly) × 1, 15 Jan 2026 – 15 Feb 2026',
    amount: 500000,
    currency: 'NGN',
    quantity: 1,
    unit_amount: 500000,
    period_start: '2026-01-15T10:00:00.000Z',
    period_end: '2026-02-15T10:00:00.000Z',
    plan_id: 'plan_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
    proration: false,
  };
  return {
    id: 'inv_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
    number: 'INV-000042',
    customer_id: 'cus_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
    subscription_id: 'sub_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
    billing_reason: 'subscription_cycle',
    status: 'open',
    currency: 'NGN',
    subtotal: 650000,
    total_discount: 0,
    total_tax: 0,
    total_tax_amounts: [],
    reverse_charge: false,
    total: 650000,
    applied_balance: 0,
    amount_due: 650000,
    pre_payment_credit_notes_amount: 0,
    post_payment_credit_notes_amount: 0,
    amount_paid: 100000,
    amount_remaining: 550000,
    period_start: '2026-01-15T10:00:00.000Z',
    period_end: '2026-02-15T10:00:00.000Z',
    due_at: '2026-01-22T10:00:00.000Z',
    attempt_count: 0,
    next_payment_attempt_at: null,
    finalizes_at: null,
    lines: [
      line,
      {
        ...line,
        id: 'il_2',
        description: 'Extra seats',
        amount: 150000,
        quantity: 3,
        unit_amount: 50000,
        plan_id: null,
      },
    ],
    hosted_invoice_url: 'https://billing.example.com/i/token',
    paid_at: null,
    voided_at: null,
    metadata: {},
    created_at: '2026-01-15T10:00:00.000Z',
    updated_at: '2026-01-15T10:00:00.000Z',
    ...overrides,
  };
}

const BUSINESS: BusinessDetails = { businessName: 'Acme Cloud Ltd', businessAddress: null, businessTaxId: null };

function page(
  overrides: Partial<Invoice> = {},
  rest: { customer?: DocumentCustomer | undefined; businessName?: string; pay?: PayButton } = {},
): string {
  const customer =
    'customer' in rest ? rest.customer : { name: 'Ada Lovelace', email: 'ada@example.com', preferred_locale: null };
  const business = { ...BUSINESS, businessName: rest.businessName ?? BUSINESS.businessName };
  return renderInvoicePage(invoiceDocument(invoice(overrides), customer, business, rest.pay ? { pay: rest.pay } : {}));
}

/** The page's markup with every text node removed: what escaping must never change. */
function tags(html: string): string[] {
  return html.match(/<[^>]*>/g) ?? [];
}

test('escapeHtml escapes & < > " \' and replaces control characters', () => {
  assert.equal(
    escapeHtml(`<script>alert("x" & 'y')</script>`),
    '&lt;script&gt;alert(&quot;x&quot; &amp; &#39;y&#39;)&lt;/script&gt;',
  );
  assert.equal(escapeHtml('a\u0000b\u001bc\u0085d\te\nf'), 'a\ufffdb\ufffdc\ufffdd\te\nf');
});

test('the CSP allows exactly the page’s one inline stylesheet, by its SHA-256, data: images (the logo), and forms to itself and the checkout pages', () => {
  for (const html of [page(), renderProblemPage(404, 'Acme')]) {
    const styles = [...html.matchAll(/<style>([\s\S]*?)<\/style>/g)];
    assert.equal(styles.length, 1);
    const hash = createHash('sha256').update(styles[0]![1]!).digest('base64');
    assert.equal(
      HOSTED_PAGE_CSP,
      `default-src 'none'; style-src 'sha256-${hash}'; img-src data:; base-uri 'none'; ` +
        "form-action 'self' https://checkout.paystack.com https://checkout.stripe.com; frame-ancestors 'none'",
    );
    assert.doesNotMatch(html, /<script|<img|<link|<iframe|<form|\sstyle=|\son[a-z]+=/i);
    assert.match(html, /<meta name="robots" content="noindex, nofollow">/);
  }
});

test('an open invoice says what is due and when; totals are due, paid and remaining; no stamp', () => {
  const html = page();
  assert.match(html, /<p class="business"><bdi>Acme Cloud Ltd<\/bdi><\/p>/);
  assert.match(html, /<h1>Invoice<\/h1>\n<div class="number">INV-000042<\/div>/);
  assert.match(html, /<p class="summary">₦5,500.00 due 22 January 2026<\/p>/);
  assert.match(html, /<dt>Date of issue<\/dt><dd>15 January 2026<\/dd>/);
  assert.match(html, /<dt>Date due<\/dt><dd>22 January 2026<\/dd>/);
  assert.match(html, /<dt>Period<\/dt><dd>15 Jan 2026 – 15 Feb 2026<\/dd>/);
  assert.match(
    html,
    /<td><bdi>Extra seats<\/bdi><\/td>\n<td class="num">3<\/td>\n<td class="num">₦500.00<\/td>\n<td class="num">₦1,500.00<\/td>/,
  );
  assert.match(html, /Amount due<\/th><td class="num">₦6,500.00</);
  assert.match(html, /Amount paid<\/th><td class="num">₦1,000.00</);
  assert.match(html, /Amount remaining<\/th><td class="num">₦5,500.00</);
  assert.match(html, /<p class="name"><bdi>Ada Lovelace<\/bdi><\/p>\n<p><bdi>ada@example.com<\/bdi><\/p>/);
  assert.doesNotMatch(html, /class="stamp"/);
  assert.match(html, /<main class="sheet status-open">/);
});

test('a reverse-charged invoice says "Reverse charge" (SPEC §14); others do not', () => {
  const reversed = page({ reverse_charge: true });
  assert.match(reversed, /<tr><th scope="row">Reverse charge<\/th><td class="num">₦0.00<\/td><\/tr>/);
  assert.match(reversed, /Reverse charge: VAT is to be accounted for by the customer\./);
  assert.doesNotMatch(page(), /Reverse charge/);
});

test('credit notes that lowered the amount due are shown before it; none, no row', () => {
  const html = page({ amount_due: 600000, pre_payment_credit_notes_amount: 50000, amount_remaining: 500000 });
  assert.match(
    html,
    /<tr><th scope="row">Credit notes<\/th><td class="num">-₦500.00<\/td><\/tr>\n<tr><th scope="row">Amount due<\/th><td class="num">₦6,000.00</,
  );
  assert.doesNotMatch(page(), /Credit notes/);
});

test('paid, void and uncollectible invoices carry their stamp and say why nothing (or what) is owed', () => {
  const paid = page({ status: 'paid', amount_paid: 650000, amount_remaining: 0, paid_at: '2026-01-20T08:00:00.000Z' });
  assert.match(paid, /<div class="stamp" aria-hidden="true">Paid<\/div>/);
  assert.match(paid, /₦6,500.00 paid<small>Paid on 20 January 2026. Thank you.<\/small>/);
  assert.match(paid, /<main class="sheet status-paid">/);

  const voided = page({ status: 'void', voided_at: '2026-01-21T08:00:00.000Z' });
  assert.match(voided, /<div class="stamp" aria-hidden="true">Void<\/div>/);
  assert.match(voided, /Nothing to pay<small>This invoice was voided on 21 January 2026.<\/small>/);
  assert.match(voided, /No payment is due on it/);

  const uncollectible = page({ status: 'uncollectible' });
  assert.match(uncollectible, /<div class="stamp" aria-hidden="true">Uncollectible<\/div>/);
  assert.match(uncollectible, /₦5,500.00 outstanding/);
});

test('the Pay button: a plain POST form to `pay.action`, only on an open invoice with something remaining', () => {
  const pay = { action: '/i/tok"en/pay', provider: 'Paystack' };
  const html = page({}, { pay });
  assert.match(
    html,
    /<p class="summary">₦5,500.00 due 22 January 2026<\/p>\n<form class="pay" method="post" action="\/i\/tok&quot;en\/pay">\n<button type="submit">Pay ₦5,500.00<\/button>\n<small>Secure payment with Paystack<\/small>\n<\/form>\n<\/div>/,
  );
  assert.equal(html.match(/<form/g)?.length, 1);
  assert.doesNotMatch(html, /<input|<script|\son[a-z]+=/i, 'no field, nothing run');
  assert.doesNotMatch(page(), /<form/, 'no provider can collect: no button');
  for (const overrides of [
    { status: 'paid', amount_paid: 650000, amount_remaining: 0 },
    { status: 'void' },
    { status: 'uncollectible' },
    { amount_paid: 650000, amount_remaining: 0 },
  ] as Partial<Invoice>[]) {
    assert.doesNotMatch(page(overrides, { pay }), /<form/, JSON.stringify(overrides));
  }
});

test('a customer without a name shows the email; a missing customer shows a dash', () => {
  const noName = page({}, { customer: { name: null, email: 'ada@example.com', preferred_locale: null } });
  assert.match(noName, /<h2>Billed to<\/h2>\n<p><bdi>ada@example.com<\/bdi><\/p>\n<\/div>/);
  assert.match(noName, /<h2>From<\/h2>\n<p class="name"><bdi>Acme Cloud Ltd<\/bdi><\/p>\n<\/div>/);
  assert.match(page({}, { customer: undefined }), /<h2>Billed to<\/h2>\n<p><bdi>—<\/bdi><\/p>/);
});

test('property: whatever text the customer, the lines and the business name hold, the markup is unchanged', () => {
  const reference = tags(page());
  const text = fc.string({
    unit: fc.constantFrom('<', '>', '&', '"', "'", '/', 's', 'c', '=', ' ', '\u202e', '\u0000'),
  });
  const anyText = fc.oneof(text, fc.string({ unit: 'binary' }), fc.constant('<script>alert(1)</script>'));
  fc.assert(
    fc.property(anyText, anyText, anyText, anyText, anyText, (name, email, first, second, business) => {
      const base = invoice();
      const html = renderInvoicePage(
        invoiceDocument(
          {
            ...base,
            lines: [
              { ...base.lines[0]!, description: first },
              { ...base.lines[1]!, description: second },
            ],
          },
          { name: name === '' ? 'x' : name, email, preferred_locale: null },
          { ...BUSINESS, businessName: business },
        ),
      );
      assert.deepEqual(tags(html), reference);
      assert.doesNotMatch(html, /<script/i);
      assert.ok(!html.includes('\u0000'), 'no NUL character');
    }),
    { numRuns: 200 },
  );
});

test('user text is bidi-isolated: a right-to-left override in a name cannot reorder the page around it', () => {
  const html = page({}, { customer: { name: 'Mallory \u202eevil', email: 'm@example.com', preferred_locale: null } });
  assert.match(html, /<p class="name"><bdi>Mallory \u202eevil<\/bdi><\/p>/);
});

test('the problem pages name the business only, and never an invoice', () => {
  const html = renderProblemPage(404, 'Acme <Cloud>');
  assert.match(html, /<title>Invoice not found · Acme &lt;Cloud&gt;<\/title>/);
  assert.match(html, /<p class="summary">Invoice not found<\/p>/);
  assert.match(renderProblemPage(429, 'Acme'), /Too many requests/);
  assert.match(renderProblemPage(500, 'Acme'), /Invoice unavailable/);
  const busy = renderProblemPage(503, 'Acme', '/i/token');
  assert.match(busy, /<p class="summary">Payment not started<\/p>/);
  assert.match(busy, /try again in a few minutes/);
  assert.match(busy, /<a class="back" href="\/i\/token">Back to the invoice<\/a>/);
  assert.doesNotMatch(renderProblemPage(404, 'Acme'), /<a /);
});

test('the continue page links to a checkout URL the CSP would not let the form redirect to', () => {
  const html = renderContinuePage('https://pay.example.com/c/pay/cs_1?a=1&b="2"', 'Stripe', 'Acme');
  assert.match(
    html,
    /<a class="back" href="https:\/\/pay\.example\.com\/c\/pay\/cs_1\?a=1&amp;b=&quot;2&quot;" rel="noreferrer">Continue to Stripe<\/a>/,
  );
});

test('property: hostile buyer addresses, tax ids, discount and tax names render as text, the markup unchanged', () => {
  const render = (text: string) =>
    renderInvoicePage(
      invoiceDocument(
        fullInvoice({
          lines: fullInvoice().lines.map((line) => (line.kind === 'discount' ? { ...line, description: text } : line)),
        }),
        {
          ...FULL_CUSTOMER,
          address: { ...FULL_CUSTOMER.address, line1: text },
          taxIds: [{ type: 'eu_vat', value: text }],
        },
        { ...FULL_BUSINESS, businessTaxId: text },
        { taxes: FULL_TAXES.map((tax) => ({ ...tax, name: text })) },
      ),
    );
  const reference = tags(render('plain'));
  fc.assert(
    fc.property(
      fc.string({ unit: fc.constantFrom('<', '>', '&', '"', "'", '/', 's', '=', '\u202e', '\u0000') }),
      (text) => {
        const html = render(text === '' ? 'x' : text);
        assert.deepEqual(tags(html), reference);
        assert.ok(!html.includes('\u0000'));
      },
    ),
    { numRuns: 100 },
  );
});

test('every language: the page of a full document matches its committed snapshot (seller and buyer details, discount, taxes by rate, credit)', () => {
  for (const language of DOCUMENT_LANGUAGES) {
    const html = renderInvoicePage(
      invoiceDocument(fullInvoice(), { ...FULL_CUSTOMER, preferred_locale: language }, FULL_BUSINESS, {
        taxes: FULL_TAXES,
        pay: { action: '/i/TOKEN/pay', provider: 'Stripe' },
      }),
    );
    const snapshot = new URL(`./snapshots/invoice.${language}.html`, import.meta.url);
    if (process.env.UPDATE_SNAPSHOTS === '1') writeFileSync(snapshot, html);
    assert.equal(html, readFileSync(snapshot, 'utf8'), language);
  }
});

test('a German customer sees German words and "1.500,00 €"; de-AT formats as Austria does', () => {
  const html = renderInvoicePage(
    invoiceDocument(fullInvoice(), { ...FULL_CUSTOMER, preferred_locale: 'de' }, FULL_BUSINESS, { taxes: FULL_TAXES }),
  );
  assert.match(html, /<html lang="de">/);
  assert.match(html, /<h1>Rechnung<\/h1>/);
  assert.match(html, /<td class="num">1\.500,00\u00a0€<\/td>\n<td class="num">1\.500,00\u00a0€<\/td>/);
  assert.match(html, /<tr class="total"><th scope="row">Gesamt<\/th><td class="num">1\.702,80\u00a0€<\/td><\/tr>/);
  assert.match(
    html,
    /<tr><th scope="row">Rabatt: \u2068WELCOME10 \(10 % off\)\u2069<\/th><td class="num">-160,00\u00a0€</,
  );
  assert.match(html, /<tr><th scope="row">\u2068VAT\u2069 19\u00a0%<\/th><td class="num">256,50\u00a0€</);
  assert.match(html, /<tr><th scope="row">Angerechnetes Guthaben<\/th><td class="num">-2,80\u00a0€</);
  assert.match(html, /<p><bdi>Steuer-ID: DE123456789<\/bdi><\/p>/);
  // Without the per-rate list, each tax line is a row of its own, by its description.
  const byLine = renderInvoicePage(invoiceDocument(fullInvoice(), FULL_CUSTOMER, FULL_BUSINESS));
  assert.match(byLine, /<tr><th scope="row">\u2068VAT 19 %\u2069<\/th><td class="num">256,50\u00a0€</);
  assert.match(html, /<dt>Fällig am<\/dt><dd>22\. Januar 2026<\/dd>/);
  const austrian = renderInvoicePage(
    invoiceDocument(fullInvoice(), { ...FULL_CUSTOMER, preferred_locale: 'de-AT' }, FULL_BUSINESS),
  );
  assert.match(austrian, /<html lang="de-AT">/);
  assert.match(austrian, /Gesamt<\/th><td class="num">€\u00a01\.702,80</);
  assert.match(austrian, /22\. Jänner 2026/);
});

test('reverse charge: no tax rows but "Reverse charge" and its note, in the customer’s language', () => {
  const reverse = (preferred_locale: string) =>
    renderInvoicePage(
      invoiceDocument(
        fullInvoice({ lines: fullInvoice().lines.filter((line) => line.kind !== 'tax') }),
        { ...FULL_CUSTOMER, preferred_locale },
        FULL_BUSINESS,
        { reverseCharge: true },
      ),
    );
  const en = reverse('en');
  assert.match(en, /<tr><th scope="row">Reverse charge<\/th><td class="num">€0\.00<\/td><\/tr>/);
  assert.match(en, /<p class="note">Reverse charge: VAT is to be accounted for by the customer\.<\/p>/);
  assert.doesNotMatch(en, /VAT 19/);
  assert.match(reverse('fr'), /Autoliquidation/);
});

test('the seller’s logo is inlined as a data: image before the name (the CSP allows data: images only); without one, no <img>', () => {
  const page = (logo: boolean) =>
    renderInvoicePage(
      invoiceDocument(fullInvoice(), FULL_CUSTOMER, {
        ...FULL_BUSINESS,
        ...(logo ? { businessLogo: { bytes: TINY_PNG, mediaType: 'image/png' as const } } : {}),
      }),
    );
  assert.ok(!page(false).includes('<img'));
  assert.ok(
    page(true).includes(
      `<p class="business"><img class="logo" src="data:image/png;base64,${TINY_PNG.toString('base64')}" alt=""><bdi>Acme Cloud Ltd</bdi></p>`,
    ),
  );
  assert.match(HOSTED_PAGE_CSP, /(^|; )img-src data:(;|$)/);
});
