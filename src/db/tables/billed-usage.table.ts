// Row shape of `billed_usage` (SPEC §15): the quantity and amount of one meter billed to a
// subscription for one period, so late events bill only the difference and a period's usage
// is billed once.
import type { Selectable } from 'kysely';

export interface BilledUsageTable {
  subscription_id: string;
  /** `meter_…`. */
  meter_id: string;
  /** The period the usage happened in, `[period_start, period_end)`, ISO 8601. */
  period_start: string;
  period_end: string;
  /** The meter's aggregate as billed: canonical decimal text. */
  quantity: string;
  /** Minor units billed for it so far (usage lines plus adjustments); PostgreSQL's bigint reads as text. */
  amount: number | string;
  /** The plan whose charge priced it (late events are adjusted at that price); null: none recorded. */
  plan_id: string | null;
  /** The invoice that billed it last. */
  invoice_id: string;
  created_at: string;
  updated_at: string;
  /**
   * What was billed before the last late adjustment (quantity, minor units, invoice, time),
   * restored when that adjustment's invoice is a draft voided by a cancel or pause; null when
   * the row was billed once only.
   */
  previous_quantity: string | null;
  previous_amount: number | string | null;
  previous_invoice_id: string | null;
  previous_updated_at: string | null;
}

export type BilledUsageRow = Selectable<BilledUsageTable>;

/**
 * Row shape of `usage_spans` (SPEC §15 "Plan changes"): the stretch `[span_start, span_end)`
 * of a subscription's period spent on `plan_id` before a plan change, whose usage that plan's
 * charges price; `invoice_id` is the invoice that billed it (null until then).
 */
export interface UsageSpansTable {
  subscription_id: string;
  plan_id: string;
  span_start: string;
  span_end: string;
  invoice_id: string | null;
  created_at: string;
}

export type UsageSpanRow = Selectable<UsageSpansTable>;
