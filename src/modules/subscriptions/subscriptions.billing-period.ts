// Billing periods (SPEC §4): pure date arithmetic in UTC. Month and year steps keep the
// day of month where it exists and clamp to the month's last day where it does not
// (Jan 31 + 1 month = Feb 28/29). Periods are counted from the subscription's billing cycle
// anchor (Stripe's model), so a clamped day comes back (anchor Jan 31: Feb 28, then Mar 31).
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

/** The anchor's `k`-th period boundary `anchor + k × count × interval` is `at`: returns k, else null. */
function boundaryIndex(anchor: Date, at: Date, interval: PlanInterval, count: number): number | null {
  let k: number;
  if (interval === 'day' || interval === 'week') {
    const length = (interval === 'day' ? 1 : 7) * count * DAY_MS;
    k = Math.round((at.getTime() - anchor.getTime()) / length);
  } else {
    const months = (at.getUTCFullYear() - anchor.getUTCFullYear()) * 12 + at.getUTCMonth() - anchor.getUTCMonth();
    k = Math.round(months / (interval === 'month' ? count : count * 12));
  }
  if (k < 0 || addInterval(anchor, interval, k * count).getTime() !== at.getTime()) return null;
  return k;
}

/**
 * The billing period that follows one ending at `after` (SPEC §4 "Billing cycle anchor"):
 * it starts at `after` and ends at the next boundary `anchor + k × intervalCount × interval`,
 * counted from the anchor itself so a clamped month end comes back (anchor Jan 31: Feb 28,
 * then Mar 31, as Stripe does). A period that does not end on the anchor (a subscription's
 * periods from before anchors existed) is followed by one full interval from its end. Pure;
 * both bounds are storable instants (MAX_TIMESTAMP at most, see addInterval).
 */
export function nextPeriodOnAnchor(input: {
  anchor: Date;
  after: Date;
  interval: PlanInterval;
  intervalCount: number;
}): Period {
  const { anchor, after, interval, intervalCount } = input;
  const k = boundaryIndex(anchor, after, interval, intervalCount);
  const end =
    k === null ? addInterval(after, interval, intervalCount) : addInterval(anchor, interval, (k + 1) * intervalCount);
  return { start: after, end };
}
