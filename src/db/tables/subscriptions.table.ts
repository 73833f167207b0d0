// Row shape of `subscriptions`. `status` is only ever written through the transition
// table (modules/subscriptions/subscriptions.status.ts) by subscriptions.lifecycle.ts.
import type { Selectable } from 'kysely';

/** Every status (the transition table beside the module says how one moves to the next). */
export const SUBSCRIPTION_STATUSES = [
  'incomplete',
  'incomplete_expired',
  'trialing',
  'active',
  'past_due',
  'unpaid',
  'paused',
  'cancelled',
] as const;
export type SubscriptionStatus = (typeof SUBSCRIPTION_STATUSES)[number];

export const CANCELLATION_REASONS = ['requested', 'dunning_exhausted', 'incomplete_expired'] as const;
export type CancellationReason = (typeof CANCELLATION_REASONS)[number];

export interface SubscriptionsTable {
  id: string;
  customer_id: string;
  plan_id: string;
  status: SubscriptionStatus;
  current_period_start: string | null;
  current_period_end: string | null;
  trial_end: string | null;
  /**
   * Where the billing periods are counted from (SPEC §4): creation, or the trial's end; each
   * period ends at the anchor plus a whole number of intervals, whenever it is paid.
   */
  billing_cycle_anchor: string;
  /** Units of the plan billed: 1 … 1,000,000 (SPEC §13). */
  quantity: number;
  /**
   * A change scheduled for `pending_effective_at` (the period's end, SPEC §13 `pending_update`),
   * applied by the renewal; all three null when none is scheduled.
   */
  pending_plan_id: string | null;
  pending_quantity: number | null;
  pending_effective_at: string | null;
  /** 1/0 on SQLite, boolean on PostgreSQL. */
  cancel_at_period_end: boolean | number;
  cancelled_at: string | null;
  ended_at: string | null;
  cancellation_reason: CancellationReason | null;
  cancellation_comment: string | null;
  metadata: string;
  created_at: string;
  updated_at: string;
  /**
   * Provider time (ISO 8601) of the latest successful / failed payment applied to the
   * subscription (billing/subscription-payments.ts: stale reports). Internal; not in the API.
   */
  last_payment_succeeded_at: string | null;
  last_payment_failed_at: string | null;
  /** The test clock (`clock_…`) of the customer this row belongs to; null: real time (SPEC §11). */
  test_clock_id: string | null;
  /** JSON array of `txr_…` ids: the most specific tax rates (SPEC §14); '[]' for none. */
  tax_rate_ids: string;
}

export type SubscriptionRow = Selectable<SubscriptionsTable>;

/**
 * `subscription_pending_items`: a proration line a `create_prorations` change left for the
 * subscription's next invoice (SPEC §13). Written only by subscriptions.pending-items.ts.
 */
export interface SubscriptionPendingItemsTable {
  /** `pitem_…`: sortable, so the items keep the order they were made in. */
  id: string;
  subscription_id: string;
  /** JSON InvoiceLineDraft (`kind: proration`), rounded when the change was made. */
  line: string;
  /** The invoice that took it; null while it waits. */
  invoice_id: string | null;
  created_at: string;
  /** The test clock (`clock_…`) of the customer; null: real time (SPEC §11). */
  test_clock_id: string | null;
}
