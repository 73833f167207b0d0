// Row shape of `plans`. Prices (amount, currency, interval, interval_count, trial) never
// change after creation; a new price is a new plan.
import type { ColumnType, Selectable } from 'kysely';

export const PLAN_INTERVALS = ['day', 'week', 'month', 'year'] as const;
export type PlanInterval = (typeof PLAN_INTERVALS)[number];

export interface PlansTable {
  id: string;
  name: string;
  /** Minor units of `currency`. */
  amount: number;
  currency: string;
  interval: PlanInterval;
  interval_count: number;
  trial_period_days: number;
  /** 1/0 on SQLite, boolean on PostgreSQL. */
  active: boolean | number;
  metadata: string;
  /** JSON array of `txr_…` ids (SPEC §14 precedence: subscription > plan > customer); '[]' for none. */
  tax_rate_ids: string;
  /**
   * JSON array of the plan's metered charges (SPEC §15; billing/usage-charges.ts reads them);
   * '[]' for none. Set at creation, never updated: a charge is a price.
   */
  charges: ColumnType<string, string | undefined, never>;
  created_at: string;
  updated_at: string;
}

export type PlanRow = Selectable<PlansTable>;
