// Billing periods (SPEC §4): pure date arithmetic in UTC. Month and year steps keep the
// day of month where it exists and clamp to the month's last day where it does not
// (Jan 31 + 1 month = Feb 28/29). Each step starts from the previous period's end, so a
// clamped day stays clamped (Feb 28 → Mar 28); unlike Stripe there is no stored anchor day.
//
// Every period end is checked before it is stored: one past the last storable instant
// (src/shared/timestamps.ts, year 9999) is clamped to it. A subscription paid that far ahead
// is paid "for ever"; clamping keeps that meaning, keeps the text order both databases rely
// on, and never refuses the payment that bought the period (refusing would lose money that
// was really received).
import { clampTime } from '../../shared/timestamps.ts';
import type { PlanInterval } from '../../db/tables/plans.table.ts';

const DAY_MS = 86_400_000;

/**
 * `from` plus `count` × `interval`, in UTC, clamped to MAX_TIMESTAMP (9999-12-31T23:59:59.999Z)
 * when the sum would be later (or beyond what a Date can hold).
 */
export function addInterval(from: Date, interval: PlanInterval, count: number): Date {
  if (interval === 'day') return clampTime(from.getTime() + count * DAY_MS);
  if (interval === 'week') return clampTime(from.getTime() + count * 7 * DAY_MS);
  const months = interval === 'month' ? count : count * 12;
  const target = new Date(from.getTime());
  const day = from.getUTCDate();
  target.setUTCDate(1);
  target.setUTCMonth(target.getUTCMonth() + months);
  const lastDay = new Date(Date.UTC(target.getUTCFullYear(), target.getUTCMonth() + 1, 0)).getUTCDate();
  target.setUTCDate(Math.min(day, lastDay));
  return clampTime(target.getTime());
}

export interface Period {
  start: Date;
  end: Date;
}

/**
 * The period a successful payment pays for (SPEC §4): when the subscription is not active
 * or its period has ended, a new period `[max(now, current_period_end), +interval]`; an
 * early payment while active extends the current period by one interval. Both bounds are
 * storable instants: an end past year 9999 is clamped to MAX_TIMESTAMP (see addInterval).
 */
export function periodAfterPayment(input: {
  active: boolean;
  now: Date;
  currentPeriodStart: Date | null;
  currentPeriodEnd: Date | null;
  interval: PlanInterval;
  intervalCount: number;
}): Period {
  const { now, currentPeriodEnd: end } = input;
  if (input.active && end && end.getTime() > now.getTime()) {
    return {
      start: input.currentPeriodStart ?? now,
      end: addInterval(end, input.interval, input.intervalCount),
    };
  }
  const start = end && end.getTime() > now.getTime() ? end : now;
  return { start, end: addInterval(start, input.interval, input.intervalCount) };
}
