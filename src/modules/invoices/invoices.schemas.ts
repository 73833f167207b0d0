// The invoice resource (SPEC §9), defined once: these TypeBox schemas validate, serialize and
// document the routes and the `invoice.*` events, and the API types are their static types.
import Type, { type Static } from 'typebox';
import { metadataOut, Nullable, nullableTimestamp, pageOf, ref, StringEnum, timestamp } from '../../http/schemas.ts';
import type { InvoiceKind } from '../../db/tables/invoices.table.ts';
import { paymentAttemptSchema } from '../payment-attempts/payment-attempts.schemas.ts';
import { INVOICE_STATUSES } from './invoices.status.ts';

const minorUnits = (description: string) => Type.Integer({ minimum: 0, description: `${description} (minor units)` });
const signedMinorUnits = (description: string) =>
  Type.Integer({ description: `${description} (minor units; negative for a credit)` });

/** What a line bills for (SPEC §9 "Lines"); the billing core's pipeline writes them in this order. */
export const INVOICE_LINE_KINDS = ['subscription', 'proration', 'usage', 'discount', 'tax', 'adjustment'] as const;
export type InvoiceLineKind = (typeof INVOICE_LINE_KINDS)[number];

/**
 * One line of an invoice (SPEC §9 "Lines"), composed by the billing core's pipeline
 * (src/billing/compose): a subscription fee, a proration, usage, a discount, a tax or an
 * adjustment. `amount` is signed: credits and discounts are negative.
 */
export const invoiceLineSchema = Type.Object(
  {
    id: Type.String({ examples: ['il_01JD3Q7Z8X9Y0A1B2C3D4E5F6G'] }),
    kind: StringEnum(INVOICE_LINE_KINDS, { description: 'What the line bills for' }),
    description: Type.String(),
    amount: signedMinorUnits('The line total, rounded once: unit_amount × quantity for a subscription line'),
    currency: Type.String({ description: 'ISO 4217, upper case' }),
    quantity: Type.Integer({ minimum: 1 }),
    unit_amount: Nullable(
      Type.Integer({ description: 'The price of one unit (minor units); null when the line has no unit price' }),
    ),
    period_start: timestamp,
    period_end: timestamp,
    plan_id: Nullable(Type.String()),
    meter_id: Type.Optional(Type.String({ description: 'The meter a usage line bills' })),
    coupon_id: Type.Optional(Type.String({ description: 'The coupon a discount line applies' })),
    tax_rate_id: Type.Optional(Type.String({ description: 'The tax rate a tax line applies' })),
    inclusive: Type.Optional(
      Type.Boolean({
        description:
          'Tax lines only. true: the tax is already inside the lines above (an inclusive rate): shown, not added to `total`.',
      }),
    ),
    proration: Type.Boolean({ description: 'True for the lines a plan or quantity change prorated' }),
  },
  {
    $id: 'InvoiceLine',
    description:
      'What the invoice charges for, in pipeline order; `total` is the sum of the lines, but for inclusive tax lines (already inside the others).',
    examples: [
      {
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
      },
    ],
  },
);

export type InvoiceLine = Static<typeof invoiceLineSchema>;

/** A line before it is stored: the billing core composes lines, the invoice's writer gives them ids. */
export type InvoiceLineDraft = Omit<InvoiceLine, 'id'>;

/**
 * Whether `line` counts in an invoice's `total`: every line but an inclusive tax line, whose
 * amount is already inside the lines it was computed from (SPEC §14: shown, total unchanged).
 */
export function addsToTotal(line: Pick<InvoiceLineDraft, 'kind' | 'inclusive'>): boolean {
  return line.kind !== 'tax' || line.inclusive !== true;
}

/** The tax of one rate on an invoice (SPEC §14), as Stripe's `total_tax_amounts`. */
export const invoiceTaxAmountSchema = Type.Object(
  {
    tax_rate_id: Type.String(),
    display_name: Type.String({ description: "The rate's name when the invoice was composed" }),
    percentage: Type.Number({ description: 'Percent, up to 4 decimals' }),
    inclusive: Type.Boolean({ description: 'true: inside the total (shown); false: added to it' }),
    amount: signedMinorUnits('The tax of this rate, rounded once (half away from zero)'),
  },
  {
    $id: 'InvoiceTaxAmount',
    description: 'The tax one rate adds to (or, inclusive, shows inside) an invoice: its tax line, summed per rate.',
    examples: [
      {
        tax_rate_id: 'txr_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
        display_name: 'VAT',
        percentage: 19,
        inclusive: false,
        amount: 931,
      },
    ],
  },
);

export type InvoiceTaxAmount = Static<typeof invoiceTaxAmountSchema>;

/**
 * What an invoice bills (SPEC §9 "Totals"), as the billing core composes it: the lines in
 * pipeline order and their sums, all in minor units. `subtotal` = the subscription,
 * proration, usage and adjustment lines; `total_discount` = −(the discount lines), ≥ 0;
 * `total_tax` = the tax lines, inclusive ones too; `total` = every line that addsToTotal;
 * `applied_balance` = the customer's credit applied, ≥ 0; `amount_due` = total −
 * applied_balance, ≥ 0. `total_tax_amounts`: the tax per rate (SPEC §14); `reverse_charge`:
 * the customer is reverse-charged, so no tax line was made.
 */
export interface InvoiceContent {
  lines: readonly InvoiceLineDraft[];
  subtotal: number;
  total_discount: number;
  total_tax: number;
  total_tax_amounts: InvoiceTaxAmount[];
  reverse_charge: boolean;
  total: number;
  applied_balance: number;
  amount_due: number;
}

/**
 * Why an invoice was issued, in the words of Stripe's `invoice.billing_reason` (SPEC §9
 * "Billing reason"); only the ones our invoices can be told apart by.
 */
export const INVOICE_BILLING_REASONS = ['subscription_cycle', 'subscription_update', 'manual'] as const;
export type InvoiceBillingReason = (typeof INVOICE_BILLING_REASONS)[number];

/**
 * Each invoice kind's `billing_reason` (SPEC §9 "Billing reason"). A period's invoice is
 * Stripe's `subscription_cycle` — the first period's and a plan change's new period's too,
 * which Stripe calls `subscription_create` / `subscription_update`: the kind does not record
 * why a period was invoiced. A closed period's usage (a cancel's final invoice too) is billed
 * in arrears for a period that ended, as Stripe bills metered usage at the cycle.
 */
export const BILLING_REASON_OF_KIND: { readonly [kind in InvoiceKind]: InvoiceBillingReason } = {
  period: 'subscription_cycle',
  usage: 'subscription_cycle',
  proration: 'subscription_update',
  one_off: 'manual',
};

/** The example invoice of the documents. */
const INVOICE_EXAMPLE = {
  id: 'inv_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
  number: 'INV-000042',
  customer_id: 'cus_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
  subscription_id: 'sub_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
  billing_reason: 'subscription_cycle',
  status: 'open',
  currency: 'NGN',
  subtotal: 500000,
  total_discount: 0,
  total_tax: 0,
  total_tax_amounts: [],
  reverse_charge: false,
  total: 500000,
  applied_balance: 0,
  amount_due: 500000,
  pre_payment_credit_notes_amount: 0,
  post_payment_credit_notes_amount: 0,
  amount_paid: 0,
  amount_remaining: 500000,
  period_start: '2026-01-15T10:00:00.000Z',
  period_end: '2026-02-15T10:00:00.000Z',
  due_at: '2026-01-15T10:00:00.000Z',
  attempt_count: 0,
  next_payment_attempt_at: null,
  finalizes_at: null,
  lines: [
    {
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
    },
  ],
  hosted_invoice_url: 'https://billing.example.com/i/3q2-7wEvLkK9hxX0Yb1cZ2d3e4f5g6h7i8j9k0l1m2n',
  paid_at: null,
  voided_at: null,
  metadata: {},
  created_at: '2026-01-15T10:00:00.000Z',
  updated_at: '2026-01-15T10:00:00.000Z',
};

/** An invoice as the API and the `invoice.*` events show it (SPEC §9 fields). */
export const invoiceSchema = Type.Object(
  {
    id: Type.String({ examples: ['inv_01JD3Q7Z8X9Y0A1B2C3D4E5F6G'] }),
    number: Nullable(
      Type.String({
        description:
          '`<INVOICE_PREFIX>-<000001>`: gap-free, unique across instances; null while `draft` (given at finalization)',
      }),
    ),
    customer_id: Type.String(),
    subscription_id: Nullable(Type.String()),
    billing_reason: StringEnum(INVOICE_BILLING_REASONS, {
      description:
        "Why it was issued, as Stripe's `billing_reason` (SPEC §9): `subscription_cycle` — a subscription period's invoice (the first one too) or a closed period's usage; `subscription_update` — a plan change's `always_invoice` prorations; `manual` — a one-off invoice of no subscription",
    }),
    status: StringEnum(INVOICE_STATUSES),
    currency: Type.String({ description: 'ISO 4217, upper case' }),
    subtotal: signedMinorUnits('The subscription, proration, usage and adjustment lines: before discounts and taxes'),
    total_discount: minorUnits('The discounts: −(the sum of the discount lines)'),
    total_tax: signedMinorUnits("The sum of the tax lines, inclusive taxes too (as Stripe's `tax`)"),
    total_tax_amounts: Type.Array(ref(invoiceTaxAmountSchema), {
      description: 'The tax per rate (SPEC §14): exclusive ones are in `total`, inclusive ones inside the lines.',
    }),
    reverse_charge: Type.Boolean({
      description:
        'The customer was reverse-charged (`tax_exempt: reverse`, SPEC §14): no tax; documents say "Reverse charge".',
    }),
    total: signedMinorUnits('The sum of every line but inclusive tax lines (already inside the others)'),
    applied_balance: minorUnits("The customer's credit balance applied: min(balance, max(total, 0))"),
    amount_due: minorUnits(
      'What the customer owes: total − applied_balance − pre_payment_credit_notes_amount, never below 0',
    ),
    pre_payment_credit_notes_amount: minorUnits(
      'What credit notes took off amount_due while the invoice was unpaid (SPEC §14; void ones excluded)',
    ),
    post_payment_credit_notes_amount: minorUnits(
      'What credit notes gave back after payment: refunds, customer credit, out of band (void ones excluded)',
    ),
    amount_paid: minorUnits('Settled by payments, never above amount_due'),
    amount_remaining: minorUnits('amount_due − amount_paid'),
    period_start: timestamp,
    period_end: timestamp,
    due_at: timestamp,
    attempt_count: Type.Integer({ minimum: 0, description: 'Failed payments reported for this invoice' }),
    next_payment_attempt_at: nullableTimestamp,
    finalizes_at: Nullable(
      Type.String({
        format: 'date-time',
        description:
          'When a `draft` is finalized (numbered, `open`, collected): its period start + INVOICE_FINALIZE_DELAY; null otherwise',
      }),
    ),
    lines: Type.Array(ref(invoiceLineSchema)),
    hosted_invoice_url: Nullable(
      Type.String({
        description:
          'The public page a customer opens: `<PUBLIC_URL>/i/<token>`; null while it has no `number` (a draft, or a draft voided: never final)',
      }),
    ),
    paid_at: nullableTimestamp,
    voided_at: nullableTimestamp,
    metadata: metadataOut,
    created_at: timestamp,
    updated_at: timestamp,
  },
  {
    $id: 'Invoice',
    description:
      'What a customer owes for one billing period; final when issued — or, a renewal with usage or prorations, when its `draft` is finalized — and settled by payments (SPEC §9, §12).',
    examples: [INVOICE_EXAMPLE],
  },
);

export const invoiceListSchema = pageOf('InvoiceList', invoiceSchema);

export type Invoice = Static<typeof invoiceSchema>;

/**
 * One invoice with its payment attempts (SPEC §9, §10): GET /api/invoices/{id} only. Lists,
 * state changes and `invoice.*` events show the plain Invoice.
 */
export const invoiceDetailSchema = Type.Object(
  {
    ...invoiceSchema.properties,
    payment_attempts: Type.Array(ref(paymentAttemptSchema), {
      description:
        'Every request the service made to a provider to collect this invoice (checkout links, charges), oldest first.',
    }),
  },
  {
    $id: 'InvoiceDetail',
    description: 'An invoice and its payment attempts, oldest first (GET /api/invoices/{id}).',
    examples: [
      {
        ...INVOICE_EXAMPLE,
        payment_attempts: [
          {
            id: 'pat_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
            invoice_id: 'inv_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
            provider: 'paystack',
            kind: 'checkout',
            reference: 'pat-01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
            status: 'requires_action',
            amount: 500000,
            currency: 'NGN',
            provider_object_id: '0peioxfhpn',
            url: 'https://checkout.paystack.com/0peioxfhpn',
            expires_at: null,
            failure_code: null,
            failure_message: null,
            created_at: '2026-01-15T10:05:00.000Z',
            updated_at: '2026-01-15T10:05:01.000Z',
          },
        ],
      },
    ],
  },
);

export type InvoiceDetail = Static<typeof invoiceDetailSchema>;
