// When each dunning step and the final action fall due (SPEC §1 DUNNING_SCHEDULE, §4).
// Pure: no database, no clock.

/**
 * When the next action of a case is due, given when it opened and how many steps it has
 * taken. `scheduleMs` is DUNNING_SCHEDULE: delays in ms from the opening, ascending.
 *
 * - Before the last step: step `stepsTaken + 1` is due at `openedAt + scheduleMs[stepsTaken]`.
 * - After the last step (the final warning, `final: true`): the final action is due one more
 *   gap later — the gap between the last two steps (or the only step's delay when the schedule
 *   has one step). With the default `1d,3d,7d,14d` the reminders go out on days 1, 3, 7 and 14
 *   and the final action is applied on day 21. SPEC §4 calls the last reminder "the final
 *   warning before the final action", so the action cannot coincide with it; this rule gives
 *   the customer as long to act on the final warning as they had on the previous one.
 *
 * Throws RangeError for a negative `stepsTaken` or one past the schedule.
 */
export function nextActionAt(openedAt: Date, stepsTaken: number, scheduleMs: readonly number[]): Date {
  if (!Number.isInteger(stepsTaken) || stepsTaken < 0 || stepsTaken > scheduleMs.length) {
    throw new RangeError(`stepsTaken must be 0..${scheduleMs.length} (got ${stepsTaken})`);
  }
  if (stepsTaken < scheduleMs.length) return new Date(openedAt.getTime() + scheduleMs[stepsTaken]!);
  const last = scheduleMs[scheduleMs.length - 1]!;
  const gap = scheduleMs.length > 1 ? last - scheduleMs[scheduleMs.length - 2]! : last;
  return new Date(openedAt.getTime() + last + gap);
}

/** True when a case that has taken `stepsTaken` steps is due for its final action next. */
export function isFinalActionNext(stepsTaken: number, scheduleMs: readonly number[]): boolean {
  return stepsTaken >= scheduleMs.length;
}
