// How refunds add up on a payment (SPEC §4, §5 "Refunds"), pure. One rule: `amount_refunded`
// is the sum of the payment's succeeded refunds, and that sum may never exceed `amount`. A
// refund report either fits what remains, or is refused whole. A refund that failed (or was
// cancelled) stays failed: failed is final, so a late or repeated success report cannot
// count it again, and every arrival order of the same reports ends in the same refunds.
import type { PaymentStatus, RefundStatus } from './payments.table.ts';

/** A refund as recorded, or as reported: its provider reference, amount and status. */
export interface RefundFact {
  reference: string;
  /** Minor units, above 0. */
  amount: number;
  status: RefundStatus;
}

/**
 * One change a report makes to the recorded refunds: `insert` the report (a refund not
 * recorded yet, with the status reported), or `fail` a recorded succeeded refund.
 */
export type RefundChange<T extends RefundFact> =
  { action: 'insert'; refund: T } | { action: 'fail'; refund: RefundFact };

/** What reports do: the changes to make, or why they are refused (nothing is to be written). */
export type RefundPlan<T extends RefundFact> =
  { accepted: true; changes: RefundChange<T>[]; refunded: number } | { accepted: false; reason: string };

/** The payment's `amount_refunded`: the sum of its succeeded refunds (minor units). */
export function refundedTotal(refunds: readonly RefundFact[]): number {
  let total = 0;
  for (const refund of refunds) if (refund.status === 'succeeded') total += refund.amount;
  return total;
}

/**
 * Plans `reports` (one event's refunds, in order) against the refunds `recorded` for the
 * payment `{id, amount}` (minor units). Per refund reference:
 * - unknown, `succeeded`: inserted if it fits what remains (`amount` − succeeded sum), else
 *   the whole plan is refused with the reason ("refund re_1 of 4000 exceeds the 2000
 *   remaining on payment pay_…");
 * - unknown, `failed`: inserted as failed (so a later success report does not count it);
 * - recorded `succeeded`, reported `failed`: becomes failed (the sum goes down);
 * - anything else (a repeat, a success report for a failed refund): no change.
 * `refunded` is the succeeded sum after the changes, ≤ `amount` when accepted. An inserted
 * report is passed through as given (with whatever else the caller's reports carry).
 */
export function planRefunds<T extends RefundFact>(
  payment: { id: string; amount: number },
  recorded: readonly RefundFact[],
  reports: readonly T[],
): RefundPlan<T> {
  const state = new Map<string, RefundFact>(recorded.map((refund) => [refund.reference, refund]));
  const changes: RefundChange<T>[] = [];
  for (const report of reports) {
    const known = state.get(report.reference);
    if (known === undefined) {
      if (report.status === 'succeeded') {
        const remaining = payment.amount - refundedTotal([...state.values()]);
        if (report.amount > remaining) {
          return {
            accepted: false,
            reason: `refund ${report.reference} of ${report.amount} exceeds the ${Math.max(remaining, 0)} remaining on payment ${payment.id}`,
          };
        }
      }
      state.set(report.reference, report);
      changes.push({ action: 'insert', refund: report });
    } else if (known.status === 'succeeded' && report.status === 'failed') {
      const failed = { ...known, status: 'failed' as const };
      state.set(report.reference, failed);
      changes.push({ action: 'fail', refund: failed });
    }
  }
  return { accepted: true, changes, refunded: refundedTotal([...state.values()]) };
}

/**
 * The status of a paid payment with `refunded` of its `amount` refunded (minor units):
 * `succeeded` when nothing is (any more), `partially_refunded` below the amount, `refunded` at it.
 */
export function statusAfterRefunds(amount: number, refunded: number): PaymentStatus {
  if (refunded <= 0) return 'succeeded';
  return refunded >= amount ? 'refunded' : 'partially_refunded';
}
