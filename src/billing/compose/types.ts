// The shapes of the composing pipeline (SPEC §12): what its steps read (ComposeInput), what
// they write (InvoiceLineDraft, in pipeline order) and what composeInvoice returns. Plain
// data: the next features (proration §13, discounts/credit/tax §14, usage §15) add fields.
import type { ChargePrice } from './pricing.ts';
import type {
  InvoiceContent,
  InvoiceLine,
  InvoiceLineDraft,
  InvoiceLineKind,
} from '../../modules/invoices/invoices.schemas.ts';

export type { InvoiceLine, InvoiceLineDraft, InvoiceLineKind };

/**
 * A tax rate as the taxes step applies it (SPEC §14): its id and name, its percentage
 * exactly as an integer of ten-thousandths of a percent (19 % → 190000), and whether prices
 * already contain it.
 */
export interface ComposeTaxRate {
  id: string;
  display_name: string;
  percentage_e4: number;
  inclusive: boolean;
}

/** SPEC §14: `none` is taxed; `exempt` and `reverse` are not (`reverse` is noted on the invoice). */
export type ComposeTaxExempt = 'none' | 'exempt' | 'reverse';

/**
 * A composed invoice: its lines in pipeline order, without ids, and their totals (minor
 * units). The pipeline is deterministic — the same input gives the same lines, in a preview
 * and in the issued invoice (SPEC §13) — so it assigns no ids: the invoice's writer
 * (issueInvoice) gives each stored line an `il_…` id, and a preview shows none.
 */
export type ComposedInvoice = InvoiceContent;

/**
 * Why an invoice is composed: Stripe's billing reasons, ours (SPEC §12): `subscription_update`
 * is a plan change's invoice issued at once (SPEC §13 `always_invoice`, an interval change).
 */
export type InvoiceReason = 'first_period' | 'renewal' | 'one_off' | 'subscription_update' | 'preview';

/** The price a subscription line bills: a plan's id, name and price per period (minor units of `currency`). */
export interface ComposePlan {
  id: string;
  name: string;
  amount: number;
  currency: string;
}

/** The subscription period an invoice bills (ISO 8601 bounds, `[period_start, period_end)`). */
export interface ComposeSubscription {
  id: string;
  plan: ComposePlan;
  /** Units of the plan billed: an integer ≥ 1 (SPEC §13). */
  quantity: number;
  period_start: string;
  period_end: string;
}

/**
 * What a coupon takes off (SPEC §14): exactly one of `percent_off_bps` (hundredths of a
 * percent, 1…10000: 2000 = 20 %) or `amount_off` (minor units of `currency`), on the lines of
 * `applies_to_plans` (null: every plan).
 */
export interface ComposeCoupon {
  id: string;
  name: string;
  percent_off_bps: number | null;
  amount_off: number | null;
  currency: string | null;
  applies_to_plans: readonly string[] | null;
}

/**
 * A discount an invoice may take: a coupon applied to its subscription or its customer,
 * until `end` (ISO 8601, exclusive: an invoice whose period starts before it is discounted;
 * null: no end). The issuer passes only the discounts whose coupon's duration is not used up
 * (a `once` discount until its first invoice).
 */
export interface ComposeDiscount {
  id: string;
  coupon: ComposeCoupon;
  end: string | null;
}

/** A metered charge of the plan (SPEC §15): the meter it bills, the name its lines show, its price. */
export interface ComposeCharge {
  meter_id: string;
  name: string;
  price: ChargePrice;
}

/**
 * The usage of one charge over one period (ISO 8601 bounds, `[period_start, period_end)`):
 * `quantity` is the meter's aggregate over the period (a non-negative decimal string, SPEC
 * §15). `billed` is null the first time the period is billed (usage lines); for a period
 * billed before — late events under `bill_next_invoice` — it is what was billed then
 * (quantity and amount, minor units), and the adjustment line bills the difference.
 */
export interface ComposeUsage {
  charge: ComposeCharge;
  /** The plan whose charge prices it (the lines' `plan_id`); default the subscription's plan. */
  plan_id?: string;
  period_start: string;
  period_end: string;
  quantity: string;
  billed: { quantity: string; amount: number } | null;
}

/**
 * Everything the steps read. Money is integer minor units of `currency` (ISO 4217, upper
 * case), the one currency of every line.
 */
export interface ComposeInput {
  reason: InvoiceReason;
  currency: string;
  /**
   * The customer, their credit balance in `currency` (an integer ≥ 0, SPEC §14) and whether
   * they are taxed (default `none`: taxed).
   */
  customer: { id: string; balance: number; tax_exempt?: ComposeTaxExempt };
  /** The period billed; null for a one-off invoice (no subscription fee). */
  subscription: ComposeSubscription | null;
  /** Proration lines a plan or quantity change left for the next invoice (SPEC §13): `kind: proration`. */
  pending_items: readonly InvoiceLineDraft[];
  /** Usage to bill in arrears (SPEC §15): the previous period's, and late usage of periods billed before. */
  usage: readonly ComposeUsage[];
  /**
   * Discounts the invoice may take, in the order they apply (SPEC §14): the subscription's,
   * then the customer's.
   */
  discounts: readonly ComposeDiscount[];
  /**
   * The tax rates of this invoice (SPEC §14), chosen by precedence (billing/taxation.ts):
   * each adds (exclusive) or shows (inclusive) one `kind: tax` line.
   */
  tax_rates: readonly ComposeTaxRate[];
}

/**
 * One step of the pipeline: a pure function from the lines so far (and the input) to the
 * lines after it — usually the same lines with its own appended. No database, no clock.
 */
export type ComposeStep = (lines: readonly InvoiceLineDraft[], input: ComposeInput) => readonly InvoiceLineDraft[];
