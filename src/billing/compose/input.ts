// The input of a subscription period's invoice, built from the records the issuing code
// holds (a plan row, ids, the period): one place that knows which inputs exist today.
import type { PlanRow } from '../../db/tables/plans.table.ts';
import type {
  ComposeDiscount,
  ComposeInput,
  ComposeTaxExempt,
  ComposeTaxRate,
  ComposeUsage,
  InvoiceLineDraft,
  InvoiceReason,
} from './types.ts';

/** What a subscription period's invoice is composed from (ISO 8601 period bounds). */
export interface PeriodInvoiceFacts {
  reason: InvoiceReason;
  customerId: string;
  subscriptionId: string;
  /** The plan billed; `amount` may arrive as text from PostgreSQL's bigint. */
  plan: Pick<PlanRow, 'id' | 'name' | 'amount' | 'currency'>;
  periodStart: string;
  periodEnd: string;
  /** Units of the plan (SPEC §13); default 1. */
  quantity?: number;
  /** Proration items waiting for this invoice (SPEC §13), rounded already; default none. */
  pendingItems?: readonly InvoiceLineDraft[];
  /** The customer's credit balance in the plan's currency (minor units); default 0: no balances before SPEC §14. */
  balance?: number;
  /** The subscription's and the customer's discounts, in that order (SPEC §14); default none. */
  discounts?: readonly ComposeDiscount[];
  /** The tax rates that apply (billing/taxation.ts); default none. */
  taxRates?: readonly ComposeTaxRate[];
  /** Whether the customer is taxed (SPEC §14); default `none`: taxed. */
  taxExempt?: ComposeTaxExempt;
  /** Usage billed in arrears (SPEC §15: billing/usage-billing.ts invoiceUsage); default none. */
  usage?: readonly ComposeUsage[];
}

/**
 * The ComposeInput of one subscription period in the plan's currency: the plan × quantity
 * for `[periodStart, periodEnd)`, the proration items waiting for it (SPEC §13), its
 * discounts and the tax rates given (SPEC §14), the usage given (SPEC §15), and the
 * customer's balance and tax status.
 */
export function periodInvoiceInput(facts: PeriodInvoiceFacts): ComposeInput {
  const { plan } = facts;
  return {
    reason: facts.reason,
    currency: plan.currency,
    customer: { id: facts.customerId, balance: facts.balance ?? 0, tax_exempt: facts.taxExempt ?? 'none' },
    subscription: {
      id: facts.subscriptionId,
      plan: { id: plan.id, name: plan.name, amount: Number(plan.amount), currency: plan.currency },
      quantity: facts.quantity ?? 1,
      period_start: facts.periodStart,
      period_end: facts.periodEnd,
    },
    pending_items: facts.pendingItems ?? [],
    usage: facts.usage ?? [],
    discounts: facts.discounts ?? [],
    tax_rates: facts.taxRates ?? [],
  };
}

/** What a one-off invoice is composed from: items that belong to no subscription period. */
export interface OneOffInvoiceFacts {
  reason: 'one_off' | 'subscription_update' | 'preview';
  customerId: string;
  /** ISO 4217, upper case: every item's currency. */
  currency: string;
  /** Rounded lines to bill (`kind: proration` today). */
  items: readonly InvoiceLineDraft[];
  /** The customer's credit balance in `currency` (minor units, ≥ 0). */
  balance: number;
  /** A plan change's prorations: its subscription's and customer's discounts (SPEC §14); default none. */
  discounts?: readonly ComposeDiscount[];
  /** The tax rates that apply (billing/taxation.ts); default none. */
  taxRates?: readonly ComposeTaxRate[];
  /** Whether the customer is taxed (SPEC §14); default `none`: taxed. */
  taxExempt?: ComposeTaxExempt;
}

/** The ComposeInput of a one-off invoice (SPEC §12): no subscription fee, `items` as pending items. */
export function oneOffInvoiceInput(facts: OneOffInvoiceFacts): ComposeInput {
  return {
    reason: facts.reason,
    currency: facts.currency,
    customer: { id: facts.customerId, balance: facts.balance, tax_exempt: facts.taxExempt ?? 'none' },
    subscription: null,
    pending_items: facts.items,
    usage: [],
    discounts: facts.discounts ?? [],
    tax_rates: facts.taxRates ?? [],
  };
}
