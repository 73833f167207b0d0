// A test clock's refunds left in doubt by a caller that died mid-call (SPEC §10 "Refunds from
// the API", §11). A refund's lease (`claimed_until`) ends in real time, as the provider call
// it guards runs in real time, while `resume_at` is in the clock's time. An advance may pass
// `resume_at` while the lease is live — a request may still be waiting for the provider's
// answer, so nobody else may ask — and the refund would then sit in doubt at `ready`. Before
// an advance ends `ready` it asks here: a lapsed lease makes the refund due at the clock's
// current instant, so the refund job resolves it there (looking it up first: never a blind
// second refund); a live one is waited for.
import type { Deps } from '../deps.ts';
import type { JobScope } from '../db/scope.ts';
import { findLeasedRefundsOfClock, resumeLapsedRefundsAt } from '../modules/payments/payments.refund-requests.ts';
import { realClockOf } from '../shared/clock.ts';

/**
 * For test clock `scope` at the instant of `deps.clock` (a test clock's time, whose `real`
 * clock tells the leases' time): each pending refund without a provider answer whose lease
 * has lapsed in real time is made due at that instant (when `resume_at` was later). Returns
 * how many lapsed refunds are due now (moved, or due already: the advance runs the instant
 * again so the refund job takes them), and the real time at which the earliest lease still
 * live ends, or null. Real time (no clock): nothing — a real refund falls due when its lease
 * ends. Job.resumeLapsed's contract (worker/job.ts).
 */
export async function resumeLapsedRefunds(
  deps: Deps,
  scope: JobScope,
): Promise<{ resumed: number; heldUntil: Date | null }> {
  if (scope.testClockId === null) return { resumed: 0, heldUntil: null };
  const leased = await findLeasedRefundsOfClock(deps.db, scope.testClockId);
  const now = deps.clock.now().toISOString();
  const realNow = realClockOf(deps.clock).now().toISOString();
  let heldUntil: string | null = null;
  const lapsed: string[] = [];
  let dueAlready = 0;
  for (const refund of leased) {
    const until = refund.claimed_until!;
    if (until > realNow) {
      if (heldUntil === null || until < heldUntil) heldUntil = until;
    } else if (refund.resume_at !== null && refund.resume_at <= now) {
      dueAlready++;
    } else {
      lapsed.push(refund.id);
    }
  }
  const moved = await resumeLapsedRefundsAt(deps.db, lapsed, now, realNow);
  return { resumed: moved + dueAlready, heldUntil: heldUntil === null ? null : new Date(heldUntil) };
}
