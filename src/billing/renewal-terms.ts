// What a subscription's next renewal bills (SPEC §13): its plan and quantity — or, when a
// change is scheduled for the period's end (`pending_update`), the new ones — and the period
// on its anchor, which an interval change resets to the renewal's start. One function for
// the renewal and for the preview of the upcoming invoice, so they agree to the minor unit.
import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../db/database.ts';
import type { PlanRow } from '../db/tables/plans.table.ts';
import type { SubscriptionRow } from '../db/tables/subscriptions.table.ts';
import { findPlan } from '../modules/plans/plans.service.ts';
import { nextPeriodOnAnchor, type Period } from '../modules/subscriptions/subscriptions.billing-period.ts';

/** The plan, quantity, anchor and period of a subscription's next renewal. */
export interface RenewalTerms {
  plan: PlanRow;
  /** The plan of the period ending (before a scheduled change): its usage is priced by its charges (SPEC §15). */
  usagePlan: PlanRow;
  quantity: number;
  /** ISO 8601. */
  anchor: string;
  period: Period;
  /** True when the scheduled change applies at this renewal. */
  appliesPendingUpdate: boolean;
}

/** True when the two plans bill different periods (month ↔ year, or another count). */
export function changesInterval(
  a: Pick<PlanRow, 'interval' | 'interval_count'>,
  b: Pick<PlanRow, 'interval' | 'interval_count'>,
): boolean {
  return a.interval !== b.interval || a.interval_count !== b.interval_count;
}

/**
 * The terms of `row`'s renewal at its `current_period_end` (set: a subscription with a
 * period): its scheduled change applied when it has one — the new plan and quantity, and
 * the anchor moved to the period end when the interval changes (SPEC §13) — and the next
 * period on the anchor. Throws when a plan row is missing (plans are never deleted).
 */
export async function renewalTerms(
  db: Kysely<Database> | Transaction<Database>,
  row: SubscriptionRow,
): Promise<RenewalTerms> {
  const current = await findPlan(db, row.plan_id);
  if (!current) throw new Error(`plan ${row.plan_id} of subscription ${row.id} is missing`);
  let next: PlanRow | undefined;
  if (row.pending_plan_id !== null) {
    next = await findPlan(db, row.pending_plan_id);
    if (!next) throw new Error(`plan ${row.pending_plan_id} scheduled for subscription ${row.id} is missing`);
  }
  return termsOn(row, current, next);
}

/**
 * renewalTerms given the plans read already: `current` (`row.plan_id`'s) and `next` (its
 * `pending_plan_id`'s, when it has one). Pure.
 */
export function termsOn(row: SubscriptionRow, current: PlanRow, next?: PlanRow): RenewalTerms {
  const end = row.current_period_end!;
  let plan = current;
  let quantity = row.quantity;
  let anchor = row.billing_cycle_anchor;
  const appliesPendingUpdate = row.pending_plan_id !== null;
  if (row.pending_plan_id !== null && next !== undefined) {
    if (changesInterval(current, next)) anchor = end;
    plan = next;
    quantity = row.pending_quantity ?? row.quantity;
  }
  const period = nextPeriodOnAnchor({
    anchor: new Date(anchor),
    after: new Date(end),
    interval: plan.interval,
    intervalCount: plan.interval_count,
  });
  return { plan, usagePlan: current, quantity, anchor, period, appliesPendingUpdate };
}
