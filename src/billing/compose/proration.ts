// Proration (SPEC §13, Stripe's formula to the second): what a plan or quantity change in
// the middle of a period is worth. Pure: the change's code and its preview both call it, so
// the same inputs give the same lines to the minor unit.
import { ComposeInputError } from './errors.ts';
import { roundHalfAwayFromZero } from './rounding.ts';
import type { ComposePlan, InvoiceLineDraft } from './types.ts';

const DATE = new Intl.DateTimeFormat('en-GB', { day: 'numeric', month: 'short', year: 'numeric', timeZone: 'UTC' });

/** A plan and how many units of it, before or after a change. */
export interface PricedQuantity {
  plan: ComposePlan;
  /** An integer ≥ 1. */
  quantity: number;
}

/** What one change prorates: the period it falls in and when (ISO 8601). */
export interface ProrationInput {
  from: PricedQuantity;
  /** Null: the old plan's unused time is credited but nothing is charged for the rest of the
   * period — an interval change or an anchor reset starts a new period billed in full instead. */
  to: PricedQuantity | null;
  period_start: string;
  period_end: string;
  /** Inside `[period_start, period_end)`. */
  proration_date: string;
}

/**
 * The proration lines of a change at `proration_date` (SPEC §13): with
 * `f = (period_end − proration_date) / (period_end − period_start)`, a credit
 * `−round(old price × old quantity × f)` "Unused time on Pro × 3 after 15 Jan 2026" and a
 * charge `+round(new price × new quantity × f)` "Remaining time on Team × 5 after 15 Jan 2026"
 * (none when `to` is null), both `kind: proration`, `proration: true`, period
 * `[proration_date, period_end)`. Each is rounded once, half away from zero, from the exact
 * fraction (times in ms; callers pass whole seconds, as Stripe's timestamps). Money in minor
 * units of the plans' one currency. Throws ComposeInputError when `proration_date` is outside
 * the period or the currencies differ, and AmountOutOfRangeError (400) beyond 2^53 − 1.
 */
export function prorationLines(input: ProrationInput): InvoiceLineDraft[] {
  const start = Date.parse(input.period_start);
  const end = Date.parse(input.period_end);
  const at = Date.parse(input.proration_date);
  if (!(start <= at && at < end)) {
    throw new ComposeInputError(
      `proration date ${input.proration_date} is outside the period [${input.period_start}, ${input.period_end})`,
    );
  }
  if (input.to !== null && input.to.plan.currency !== input.from.plan.currency) {
    throw new ComposeInputError(
      `a change from ${input.from.plan.currency} to ${input.to.plan.currency} cannot prorate`,
    );
  }
  const remaining = BigInt(end - at);
  const length = BigInt(end - start);
  const after = DATE.format(new Date(at));
  const line = (side: PricedQuantity, sign: 1n | -1n, words: string): InvoiceLineDraft => ({
    kind: 'proration',
    description: `${words} on ${side.plan.name} × ${side.quantity} after ${after}`,
    amount: roundHalfAwayFromZero(
      sign * BigInt(side.plan.amount) * BigInt(side.quantity) * remaining,
      length,
      `the proration of ${side.plan.name} × ${side.quantity}`,
    ),
    currency: side.plan.currency,
    quantity: side.quantity,
    unit_amount: null,
    period_start: new Date(at).toISOString(),
    period_end: new Date(end).toISOString(),
    plan_id: side.plan.id,
    proration: true,
  });
  const lines = [line(input.from, -1n, 'Unused time')];
  if (input.to !== null) lines.push(line(input.to, 1n, 'Remaining time'));
  return lines;
}
