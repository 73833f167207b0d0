// Row shapes of `dunning_cases` and `dunning_steps` (SPEC §4 "Dunning case").
import type { ColumnType, Selectable } from 'kysely';

export const DUNNING_CASE_STATUSES = ['open', 'recovered', 'exhausted', 'cancelled'] as const;
export type DunningCaseStatus = (typeof DUNNING_CASE_STATUSES)[number];
export const DUNNING_REASONS = ['payment_failed', 'renewal_unpaid'] as const;
export type DunningReason = (typeof DUNNING_REASONS)[number];

export interface DunningCasesTable {
  id: string;
  customer_id: string;
  subscription_id: string;
  /** The failed payment that opened the case (`pay_…`), null for an unpaid renewal. */
  payment_id: string | null;
  /** The invoice (`inv_…`) the case chases (SPEC §9); null for cases opened before invoices. */
  invoice_id: ColumnType<string | null, string | null | undefined, string | null>;
  status: DunningCaseStatus;
  reason: DunningReason;
  /** Failed payments seen while the case was open, counting the first. */
  attempts: number;
  /** Steps of DUNNING_SCHEDULE taken so far (0 = none yet). */
  step: number;
  /**
   * When the next step — or, after the last, the final action — is due; null once closed.
   * While a retry is awaited (`retry_requested_at`): when its reminder goes out without an outcome.
   */
  next_action_at: string | null;
  /**
   * When step `step + 1` asked for a charge of the invoice (SPEC §10 "Dunning retries"); its
   * reminder waits for that charge's outcome. Null when no retry is awaited.
   */
  retry_requested_at: string | null;
  /** Minor units. */
  amount_due: number;
  currency: string;
  opened_at: string;
  closed_at: string | null;
  created_at: string;
  updated_at: string;
  /** The test clock (`clock_…`) of the customer this row belongs to; null: real time (SPEC §11). */
  test_clock_id: string | null;
}

export interface DunningStepsTable {
  case_id: string;
  /** 1-based step number within DUNNING_SCHEDULE. */
  step: number;
  /** 1/0 on SQLite, boolean on PostgreSQL: the last step, the warning before the final action. */
  final: boolean | number;
  /** The `dunning.reminder` event this step emitted. */
  event_id: string;
  taken_at: string;
}

export type DunningCaseRow = Selectable<DunningCasesTable>;
export type DunningStepRow = Selectable<DunningStepsTable>;
