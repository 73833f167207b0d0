// A document with everything an invoice document can show, for the renderers' tests: seller
// and buyer addresses and tax ids, a plan and an extra line, a 10 % discount, VAT at two
// rates, customer credit applied (EUR; every amount in minor units and consistent).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Invoice } from '../../src/modules/invoices/invoices.schemas.ts';
import type { BusinessDetails, DocumentCustomer, TaxSummary } from '../../src/modules/documents/documents.model.ts';

const START = '2026-01-15T10:00:00.000Z';
const END = '2027-01-15T10:00:00.000Z';

const LINE: Invoice['lines'][number] = {
  id: 'il_01',
  kind: 'subscription',
  description: 'Pro (yearly) × 1, 15 Jan 2026 – 15 Jan 2027',
  amount: 150000,
  currency: 'EUR',
  quantity: 1,
  unit_amount: 150000,
  period_start: START,
  period_end: END,
  plan_id: 'plan_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
  proration: false,
};

/** subtotal 1,600.00; discount −160.00; VAT 19 % 256.50 + VAT 7 % 6.30; total 1,702.80; credit 2.80; due 1,700.00. */
export function fullInvoice(overrides: Partial<Invoice> = {}): Invoice {
  return {
    id: 'inv_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
    number: 'INV-000042',
    customer_id: 'cus_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
    subscription_id: 'sub_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
    billing_reason: 'subscription_cycle',
    status: 'open',
    currency: 'EUR',
    subtotal: 160000,
    total_discount: 16000,
    total_tax: 26280,
    total: 170280,
    applied_balance: 280,
    amount_due: 170000,
    pre_payment_credit_notes_amount: 0,
    post_payment_credit_notes_amount: 0,
    amount_paid: 0,
    amount_remaining: 170000,
    period_start: START,
    period_end: END,
    due_at: '2026-01-22T10:00:00.000Z',
    attempt_count: 0,
    next_payment_attempt_at: null,
    finalizes_at: null,
    lines: [
      LINE,
      {
        ...LINE,
        id: 'il_02',
        kind: 'adjustment',
        description: 'Extra seats',
        amount: 10000,
        quantity: 2,
        unit_amount: 5000,
        plan_id: null,
      },
      {
        ...LINE,
        id: 'il_03',
        kind: 'discount',
        description: 'WELCOME10 (10 % off)',
        amount: -16000,
        unit_amount: null,
        plan_id: null,
        coupon_id: 'coupon_01',
      },
      {
        ...LINE,
        id: 'il_04',
        kind: 'tax',
        description: 'VAT 19 %',
        amount: 25650,
        unit_amount: null,
        plan_id: null,
        tax_rate_id: 'txr_19',
      },
      {
        ...LINE,
        id: 'il_05',
        kind: 'tax',
        description: 'VAT 7 %',
        amount: 630,
        unit_amount: null,
        plan_id: null,
        tax_rate_id: 'txr_07',
      },
    ],
    // Per rate: FULL_TAXES, given to a document explicitly; empty here, so tax lines show as rows.
    total_tax_amounts: [],
    reverse_charge: false,
    hosted_invoice_url: 'https://billing.example.com/i/TOKEN',
    paid_at: null,
    voided_at: null,
    metadata: {},
    created_at: START,
    updated_at: START,
    ...overrides,
  };
}

/** The taxes step's per-rate summary of fullInvoice(). */
export const FULL_TAXES: TaxSummary[] = [
  { name: 'VAT', percentage: 19, inclusive: false, amount: 25650 },
  { name: 'VAT', percentage: 7, inclusive: false, amount: 630 },
];

/** A German business customer with an address and a VAT id. */
export const FULL_CUSTOMER = {
  name: 'Jürgen Müller GmbH',
  email: 'buchhaltung@mueller.example',
  preferred_locale: 'de',
  address: { line1: 'Hauptstraße 5', postal_code: '10115', city: 'Berlin', country: 'DE' },
  taxIds: [{ type: 'eu_vat', value: 'DE123456789' }],
} satisfies DocumentCustomer;

/** BUSINESS_NAME, BUSINESS_ADDRESS (a literal `\n` between lines, as in the environment), BUSINESS_TAX_ID. */
export const FULL_BUSINESS: BusinessDetails = {
  businessName: 'Acme Cloud Ltd',
  businessAddress: '1 Main Street\\nDublin D02 X285\\nIreland',
  businessTaxId: 'IE1234567T',
};

/** A 1 × 1 PNG (a valid file: pdfkit and browsers decode it), for BUSINESS_LOGO_PATH. */
export const TINY_PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
);

/** Writes `bytes` to a new temporary file named `name`, removed after the test; returns its path. */
export function temporaryFile(t: { after: (fn: () => void) => void }, name: string, bytes: Buffer): string {
  const dir = mkdtempSync(join(tmpdir(), 'billing-logo-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, name);
  writeFileSync(path, bytes);
  return path;
}
