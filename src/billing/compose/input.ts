// The input of a subscription period's invoice, built from the records the issuing code
// holds (a plan row, ids, the period): one place that knows which inputs exist today.
import type { PlanRow } from '../../db/tables/plans.table.ts';
import type { ComposeInput, ComposeTaxExempt, ComposeTaxRate, InvoiceReason } from './types.ts';

/** What a subscription period's invoice is composed from (ISO 8601 period bounds). */
export interface PeriodInvoiceFacts {
  reason: InvoiceReason;
  customerId: string;
  subscriptionId: string;
  /** The plan billed; `amount` may arrive as text from PostgreSQL's bigint. */
  plan: Pick<PlanRow, 'id' | 'name' | 'amount' | 'currency'>;
  periodStart: string;
  periodEnd: string;
  /** Default 1: subscriptions have no quantity before SPEC §13. */
  quantity?: number;
  /** The customer's credit balance in the plan's currency (minor units); default 0: no balances before SPEC §14. */
  balance?: number;
  /** The tax rates that apply (billing/taxation.ts); default none. */
  taxRates?: readonly ComposeTaxRate[];
  /** Whether the customer is taxed (SPEC §14); default `none`: taxed. */
  taxExempt?: ComposeTaxExempt;
}

/**
 * The ComposeInput of one subscription period in the plan's currency: the plan × quantity
 * for `[periodStart, periodEnd)`, no pending items, usage or discounts (none exist before
 * SPEC §13–§15), the customer's balance and tax status, and the tax rates given.
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
    pending_items: [],
    usage: [],
    discounts: [],
    tax_rates: facts.taxRates ?? [],
  };
}
