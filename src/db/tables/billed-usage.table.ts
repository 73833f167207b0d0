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
  /** The invoice that billed it last. */
  invoice_id: string;
  created_at: string;
  updated_at: string;
}

export type BilledUsageRow = Selectable<BilledUsageTable>;
