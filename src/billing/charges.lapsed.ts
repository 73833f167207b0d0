// A test clock's charges left in doubt by a worker that died mid-call (SPEC §10, §11). Such an
// attempt stays `pending` under a lease that ends in real time, while its invoice's next
// attempt moved one lease on in the clock's time — past the advance's target when the charge
// was claimed at it. Before an advance ends `ready` it asks here: a lapsed lease makes the
// invoice due at the clock's current instant, so the charge job resolves it there (asking the
// provider first, charges.ts step 2: never charging blindly); a live one (another worker
// calling the provider) is waited for.
import type { Deps } from '../deps.ts';
import type { JobScope } from '../db/scope.ts';
import { transactionWithRetry } from '../db/transaction.ts';
import { lockInvoice, setNextPaymentAttempts } from '../modules/invoices/invoices.lifecycle.ts';
import { findPendingChargesOfClock, findUnresolvedCharge } from '../modules/payment-attempts/payment-attempts.ts';
import { realClockOf } from '../shared/clock.ts';

/** What resumeLapsedCharges found: invoices made due now, and the end of the earliest live lease. */
export interface LapsedCharges {
  /** Invoices whose pending charge's lease lapsed, made due at the clock's instant. */
  resumed: number;
  /** Real time at which the earliest lease still live ends; null when none is. */
  heldUntil: Date | null;
}

/**
 * For test clock `scope` at the instant of `deps.clock` (a test clock's time, whose `real`
 * clock tells the leases' time): each open invoice whose `pending` charge attempt's lease
 * (`locked_until`, real time) has lapsed gets `next_payment_attempt_at` = that instant (when
 * it was later), under the invoice's lock and re-checked there, so the charge job claims it
 * now and asks the provider. Returns how many, and the earliest end of a lease still live.
 * Real time (no clock): nothing — a real charge's invoice falls due when its lease ends.
 */
export async function resumeLapsedCharges(deps: Deps, scope: JobScope): Promise<LapsedCharges> {
  if (scope.testClockId === null) return { resumed: 0, heldUntil: null };
  const pending = await findPendingChargesOfClock(deps.db, scope.testClockId);
  const now = deps.clock.now().toISOString();
  const realNow = realClockOf(deps.clock).now().toISOString();
  const isLive = (lockedUntil: string | null) => lockedUntil !== null && lockedUntil > realNow;
  let heldUntil: string | null = null;
  for (const row of pending) {
    if (isLive(row.locked_until) && (heldUntil === null || row.locked_until! < heldUntil)) heldUntil = row.locked_until;
  }
  const lapsed = pending.filter(
    (row) => !isLive(row.locked_until) && (row.next_payment_attempt_at === null || row.next_payment_attempt_at > now),
  );
  const resumed =
    lapsed.length === 0
      ? []
      : await transactionWithRetry(deps.db, async (trx) => {
          const due: string[] = [];
          // Invoice, then attempt (the lock order); the worker that held the lease may have
          // recorded its answer since the read.
          for (const { invoice_id: id } of lapsed) {
            const invoice = await lockInvoice(trx, id);
            const attempt = await findUnresolvedCharge(trx, id);
            if (invoice.status !== 'open' || attempt?.status !== 'pending' || isLive(attempt.locked_until)) continue;
            if (invoice.next_payment_attempt_at !== null && invoice.next_payment_attempt_at <= now) continue;
            due.push(id);
          }
          await setNextPaymentAttempts(trx, deps, due, now);
          return due;
        });
  return { resumed: resumed.length, heldUntil: heldUntil === null ? null : new Date(heldUntil) };
}
