// What a plan or quantity change does (SPEC §13), decided without a database: whether it
// applies now, at the period's end or as a trial's swap; with which proration behaviour; and
// the proration lines (compose/proration.ts). The change (plan-changes.ts) and its preview
// call this one function with the same facts, so they agree to the minor unit.
import type { PlanRow } from '../db/tables/plans.table.ts';
import type { SubscriptionStatus } from '../db/tables/subscriptions.table.ts';
import { AppError, StateConflictError, ValidationError } from '../http/errors.ts';
import { nextPeriodOnAnchor, type Period } from '../modules/subscriptions/subscriptions.billing-period.ts';
import { prorationLines } from './compose/proration.ts';
import { toSafeAmount } from './compose/rounding.ts';
import type { ComposePlan, InvoiceLineDraft } from './compose/types.ts';
import { changesInterval } from './renewal-terms.ts';

/** The exact 409 text for a change the subscription's status forbids (SPEC §13). */
export const CANNOT_CHANGE = 'subscription cannot be changed in its current state';

export const PRORATION_BEHAVIORS = ['create_prorations', 'always_invoice', 'none'] as const;
export type ProrationBehavior = (typeof PRORATION_BEHAVIORS)[number];

/** A change as the client asks for it (PATCH /api/subscriptions/{id}, POST /api/invoices/preview). */
export interface ChangeRequest {
  plan_id?: string;
  quantity?: number;
  proration_behavior?: ProrationBehavior;
  /** ISO 8601, inside the current period. */
  proration_date?: string;
  billing_cycle_anchor?: 'unchanged' | 'now';
  effective?: 'immediately' | 'period_end';
}

/** A plan as the rules read it. */
export type ChangePlan = Pick<
  PlanRow,
  'id' | 'name' | 'amount' | 'currency' | 'interval' | 'interval_count' | 'active'
>;

/** Everything a change is decided from. */
export interface ChangeFacts {
  status: SubscriptionStatus;
  /** The current period (ISO 8601). */
  period_start: string;
  period_end: string;
  from: { plan: ChangePlan; quantity: number };
  to: { plan: ChangePlan; quantity: number };
  request: ChangeRequest;
  /** The customer's clock's time. */
  now: Date;
}

/** What the change does. Money in minor units of the plans' currency; times ISO 8601. */
export type ChangeDecision =
  /** In a trial: the plan and quantity are swapped now, no lines, the trial goes on. */
  | { kind: 'trial_swap' }
  /** `pending_update`: applied by the renewal at `effective_at` (the period end), no proration. */
  | { kind: 'scheduled'; effective_at: string }
  /** Now, in the same period: `lines` (credit, charge) wait, are invoiced now, or are none. */
  | { kind: 'same_period'; behavior: ProrationBehavior; proration_date: string; lines: InvoiceLineDraft[] }
  /** Now, and a new period starts (interval change, anchor now): the old plan's unused time credited (unless `none`). */
  | {
      kind: 'new_period';
      behavior: ProrationBehavior;
      proration_date: string;
      lines: InvoiceLineDraft[];
      period: Period;
    };

function composePlan(plan: ChangePlan): ComposePlan {
  return { id: plan.id, name: plan.name, amount: Number(plan.amount), currency: plan.currency };
}

/** Price × quantity of one period, exactly; AmountOutOfRangeError (400) beyond 2^53 − 1. */
function periodAmount(side: { plan: ChangePlan; quantity: number }): bigint {
  return BigInt(toSafeAmount(BigInt(side.plan.amount) * BigInt(side.quantity), `${side.plan.name} × ${side.quantity}`));
}

/** `now` to the second (Stripe's timestamps), but never before the period's start. */
function defaultProrationDate(now: Date, periodStart: string): string {
  const second = Math.floor(now.getTime() / 1000) * 1000;
  return new Date(Math.max(second, Date.parse(periodStart))).toISOString();
}

/**
 * Decides the change of `facts` (SPEC §13). Defaults: in a trial the plan is swapped now with
 * no lines; an interval change (or `billing_cycle_anchor: now`) applies now, starts a new
 * period at the proration date and credits the unused time (`always_invoice`); an upgrade —
 * price × quantity per period not below the old one, same interval — applies now with
 * `always_invoice`; a downgrade is scheduled for the period end with no proration (made
 * immediate — `effective: immediately`, or a proration option given — it defaults to
 * `create_prorations`). Throws StateConflictError (409,
 * CANNOT_CHANGE) unless `trialing`/`active`; 409 `conflict` once the period has ended and
 * its renewal has not run yet; ValidationError (400) for an archived plan,
 * another currency, a change that changes nothing, proration options on a period-end change,
 * a proration date outside the period (or, for a new period, at its very start); and
 * AmountOutOfRangeError (400) when price × quantity exceeds 2^53 − 1.
 */
export function decideChange(facts: ChangeFacts): ChangeDecision {
  const { from, to, request } = facts;
  if (facts.status !== 'trialing' && facts.status !== 'active') throw new StateConflictError(CANNOT_CHANGE);
  // Between a period's end and its renewal no period holds "now": the renewal comes first.
  if (facts.now.getTime() >= Date.parse(facts.period_end)) {
    throw new AppError('conflict', 'the subscription is due for renewal: retry the change once it has renewed');
  }
  if (to.plan.id !== from.plan.id && !to.plan.active) {
    throw new ValidationError(`plan ${to.plan.id} is archived and takes no subscriptions`, 'plan_id');
  }
  if (to.plan.currency !== from.plan.currency) {
    throw new ValidationError(
      `plan ${to.plan.id} is in ${to.plan.currency}, the subscription in ${from.plan.currency}: a change keeps the currency`,
      'plan_id',
    );
  }
  const newAmount = periodAmount(to);
  const oldAmount = periodAmount(from);
  const intervalChange = changesInterval(from.plan, to.plan);
  const anchorNow = request.billing_cycle_anchor === 'now';
  if (to.plan.id === from.plan.id && to.quantity === from.quantity && !anchorNow) {
    throw new ValidationError('the change names no new plan or quantity');
  }
  if (request.effective === 'period_end') {
    if (request.proration_behavior !== undefined || request.proration_date !== undefined || anchorNow) {
      throw new ValidationError(
        'a change at the period end is not prorated: proration_behavior, proration_date and billing_cycle_anchor "now" apply to immediate changes',
        'effective',
      );
    }
    return { kind: 'scheduled', effective_at: facts.period_end };
  }
  if (facts.status === 'trialing') return { kind: 'trial_swap' };

  const prorationDate = request.proration_date ?? defaultProrationDate(facts.now, facts.period_start);
  const at = Date.parse(prorationDate);
  if (!(Date.parse(facts.period_start) <= at && at < Date.parse(facts.period_end))) {
    throw new ValidationError(
      `proration_date must lie inside the current period [${facts.period_start}, ${facts.period_end})`,
      'proration_date',
    );
  }
  const date = new Date(at).toISOString();
  const prorate = (target: { plan: ChangePlan; quantity: number } | null) =>
    prorationLines({
      from: { plan: composePlan(from.plan), quantity: from.quantity },
      to: target === null ? null : { plan: composePlan(target.plan), quantity: target.quantity },
      period_start: facts.period_start,
      period_end: facts.period_end,
      proration_date: date,
    });

  if (intervalChange || anchorNow) {
    if (at === Date.parse(facts.period_start)) {
      throw new ValidationError(
        'a change that starts a new period must come after the current period has begun: pass a later proration_date',
        'proration_date',
      );
    }
    const behavior = request.proration_behavior ?? 'always_invoice';
    const period = nextPeriodOnAnchor({
      anchor: new Date(at),
      after: new Date(at),
      interval: to.plan.interval,
      intervalCount: to.plan.interval_count,
    });
    return {
      kind: 'new_period',
      behavior,
      proration_date: date,
      lines: behavior === 'none' ? [] : prorate(null),
      period,
    };
  }
  const upgrade = newAmount >= oldAmount;
  // Proration options given say the client wants it now: only a bare downgrade waits.
  const bare = request.proration_behavior === undefined && request.proration_date === undefined;
  if (!upgrade && request.effective === undefined && bare) return { kind: 'scheduled', effective_at: facts.period_end };
  const behavior = request.proration_behavior ?? (upgrade ? 'always_invoice' : 'create_prorations');
  return { kind: 'same_period', behavior, proration_date: date, lines: behavior === 'none' ? [] : prorate(to) };
}
