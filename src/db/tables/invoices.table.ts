// Row shapes of `invoices` and `invoice_numbers` (SPEC §9). `status` is only ever written
// through the transition table (modules/invoices/invoices.status.ts) by invoices.lifecycle.ts.
import type { Selectable } from 'kysely';

/** Every status (the transition table beside the module says how one moves to the next). */
export const INVOICE_STATUSES = ['draft', 'open', 'paid', 'void', 'uncollectible'] as const;
export type InvoiceStatus = (typeof INVOICE_STATUSES)[number];

/**
 * What an invoice bills (SPEC §9, §13): `period` — a subscription's period (one per
 * (subscription, period_start): a partial unique index) —, `proration` — a plan change's
 * `always_invoice` prorations, of a subscription but no period of its own —, `usage` — a closed
 * period's usage billed on its own when the next period was invoiced in advance (SPEC §15) —,
 * `one_off`.
 */
export const INVOICE_KINDS = ['period', 'proration', 'usage', 'one_off'] as const;
export type InvoiceKind = (typeof INVOICE_KINDS)[number];

/**
 * Why an invoice was issued, in the words of Stripe's `invoice.billing_reason` (SPEC §9
 * "Billing reason"): the reasons an issued invoice can have (a preview's `upcoming` is never stored).
 */
export const INVOICE_BILLING_REASONS = [
  'subscription_create',
  'subscription_cycle',
  'subscription_update',
  'manual',
] as const;
export type InvoiceBillingReason = (typeof INVOICE_BILLING_REASONS)[number];

export interface InvoicesTable {
  id: string;
  /**
   * `<INVOICE_PREFIX>-<000001>`: gap-free per prefix, unique (invoice_numbers). Null while
   * `draft`: the number is taken at finalization, so a voided draft leaves no gap.
   */
  number: string | null;
  customer_id: string;
  /** Null for a one-off invoice: `period`, `proration` and `usage` invoices belong to their subscription. */
  subscription_id: string | null;
  kind: InvoiceKind;
  /** Written once by its issuer, who knows why (billing/issue.ts); never changes. */
  billing_reason: InvoiceBillingReason;
  status: InvoiceStatus;
  /** ISO 4217, upper case. */
  currency: string;
  /** Minor units, signed: the subscription, proration, usage and adjustment lines (SPEC §9 "Totals"). */
  subtotal: number;
  /** Minor units, ≥ 0: −(the sum of the discount lines). */
  total_discount: number;
  /** Minor units: the sum of the tax lines, inclusive ones too (SPEC §14). */
  total_tax: number;
  /** JSON array of InvoiceTaxAmount (invoices.schemas.ts): the tax per rate as composed; '[]' for none. */
  total_tax_amounts: string;
  /** 1/0 on SQLite, boolean on PostgreSQL: the customer was reverse-charged (SPEC §14), so no tax. */
  reverse_charge: boolean | number;
  /** Minor units, signed: the sum of every line but inclusive tax lines (addsToTotal). */
  total: number;
  /** Minor units, ≥ 0: the customer's credit balance applied to this invoice. */
  applied_balance: number;
  /**
   * Minor units, ≥ 0: total − applied_balance − pre_payment_credit_notes_amount (a credit
   * note on an unpaid invoice lowers what is due, SPEC §14).
   */
  amount_due: number;
  /** Minor units, ≥ 0: what non-void credit notes took off `amount_due` before payment. */
  pre_payment_credit_notes_amount: number;
  /** Minor units, ≥ 0: what non-void credit notes gave back after payment (refund, credit, out of band). */
  post_payment_credit_notes_amount: number;
  /** Minor units: what payments settled, never above `amount_due` (an overpayment stays on the payment). */
  amount_paid: number;
  period_start: string;
  period_end: string;
  due_at: string;
  /** Failed payments reported for this invoice. */
  attempt_count: number;
  next_payment_attempt_at: string | null;
  /**
   * When automatic charges of this invoice stopped for good (SPEC §10 "Dunning retries"): a
   * charge needed the customer (authentication, OTP, a paused charge). Null while the worker
   * may charge it.
   */
  charges_stopped_at: string | null;
  /** When a `draft` is finalized (SPEC §12 "Drafts"): period start + INVOICE_FINALIZE_DELAY; null otherwise. */
  finalizes_at: string | null;
  /** JSON array of InvoiceLine (invoices.schemas.ts); fixed when the invoice is issued. */
  lines: string;
  /** 32 random bytes, base64url: the secret part of `hosted_invoice_url` (`/i/<token>`). */
  hosted_token: string;
  paid_at: string | null;
  voided_at: string | null;
  marked_uncollectible_at: string | null;
  /** JSON object of string values. */
  metadata: string;
  created_at: string;
  updated_at: string;
  /** The test clock (`clock_…`) of the customer this row belongs to; null: real time (SPEC §11). */
  test_clock_id: string | null;
}

/** One counter per INVOICE_PREFIX: the last number issued. */
export interface InvoiceNumbersTable {
  prefix: string;
  last_number: number;
}

export type InvoiceRow = Selectable<InvoicesTable>;
