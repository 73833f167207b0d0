// How refunds add up on a payment (SPEC §4, §5 "Refunds", §10), pure. One rule: `amount_refunded`
// is the sum of the payment's succeeded refunds, and that sum may never exceed `amount`. A
// refund report either fits what remains, or is refused whole. A refund that failed (or was
// cancelled) stays failed: failed is final, so a late or repeated success report cannot
// count it again, and every arrival order of the same reports ends in the same refunds.
// Refunds requested through the API are `pending` until a report settles them: a request must
// fit `amount` − succeeded − pending (refundableAmount), and a report of the same refund turns
// the pending row into the reported one instead of adding a second refund.
import type { PaymentStatus, RefundStatus } from '../../db/tables/payments.table.ts';

/** A refund as recorded, or as reported: its provider reference, amount and status. */
export interface RefundFact {
  reference: string;
  /** Minor units, above 0. */
  amount: number;
  status: RefundStatus;
}

/**
 * A recorded refund; `requestId` is our id (`re_…`) when it was requested through the API,
 * `answered` true when the provider's create call answered with its id (the provider surely
 * has that refund; an API refund without it may or may not exist there).
 */
export interface RecordedRefund extends RefundFact {
  requestId?: string | null;
  answered?: boolean;
}

/**
 * A reported refund (`succeeded` or `failed`). How a report finds the pending API refund it
 * settles when its `reference` is not recorded yet: `requestReference` — our refund id, when
 * the provider carries it back (Stripe: the refund's metadata) — or, with `matchByAmount`, the
 * oldest pending refund of the same amount the provider answered for, else the oldest
 * pending one of that amount (Paystack's events name neither the refund its create call
 * returned nor anything of ours).
 */
export interface ReportedRefund extends RefundFact {
  requestReference?: string | null;
  matchByAmount?: boolean;
}

/**
 * One change a report makes to the recorded refunds: `insert` the report (a refund not
 * recorded yet, with the status reported), `fail` a recorded succeeded refund, or `settle` a
 * recorded pending refund (known by its current `refund.reference`) with the report: it takes
 * the report's status, reference and time.
 */
export type RefundChange<T extends RefundFact> =
  | { action: 'insert'; refund: T }
  | { action: 'fail'; refund: RefundFact }
  | { action: 'settle'; refund: RecordedRefund; report: T };

/** What reports do: the changes to make, or why they are refused (nothing is to be written). */
export type RefundPlan<T extends RefundFact> =
  { accepted: true; changes: RefundChange<T>[]; refunded: number } | { accepted: false; reason: string };

/** The payment's `amount_refunded`: the sum of its succeeded refunds (minor units). */
export function refundedTotal(refunds: readonly RefundFact[]): number {
  let total = 0;
  for (const refund of refunds) if (refund.status === 'succeeded') total += refund.amount;
  return total;
}

/** The sum of the pending refunds (minor units): requested, not settled yet. */
export function pendingTotal(refunds: readonly RefundFact[]): number {
  let total = 0;
  for (const refund of refunds) if (refund.status === 'pending') total += refund.amount;
  return total;
}

/**
 * What a refund request may still ask for on a payment of `amount` (minor units): `amount`
 * − succeeded − pending, never below 0. SPEC §10: pending refunds count, so concurrent or
 * repeated requests can never promise more than was paid; a failed one frees its amount.
 */
export function refundableAmount(amount: number, recorded: readonly RefundFact[]): number {
  return Math.max(amount - refundedTotal(recorded) - pendingTotal(recorded), 0);
}

function exceeds(report: RefundFact, remaining: number, paymentId: string): { accepted: false; reason: string } {
  return {
    accepted: false,
    reason: `refund ${report.reference} of ${report.amount} exceeds the ${Math.max(remaining, 0)} remaining on payment ${paymentId}`,
  };
}

/** The pending API refund `report` settles when its reference is not recorded, if any. */
function pendingMatch<T extends ReportedRefund>(
  state: Map<string, RecordedRefund>,
  report: T,
): RecordedRefund | undefined {
  const pending = [...state.values()].filter((refund) => refund.status === 'pending');
  if (report.requestReference) {
    const named = pending.find((refund) => refund.requestId === report.requestReference);
    if (named) return named;
  }
  if (!report.matchByAmount) return undefined;
  // A refund the provider answered for exists there; one without an answer may not: the
  // provider's event is first the former's (SPEC §10).
  const sameAmount = pending.filter((refund) => refund.amount === report.amount);
  return sameAmount.find((refund) => refund.answered === true) ?? sameAmount[0];
}

/**
 * Plans `reports` (one event's refunds, in order) against the refunds `recorded` for the
 * payment `{id, amount}` (minor units; `recorded` oldest first). Per report:
 * - a recorded pending refund it names (by reference, by `requestReference`, or — with
 *   `matchByAmount` — the oldest pending one of its amount, answered ones first) is settled: `succeeded` if the
 *   succeeded sum stays ≤ `amount` (else the plan is refused), or `failed` (its amount is free);
 * - unknown, `succeeded`: inserted if it fits what remains (`amount` − succeeded sum: a report
 *   is the provider's fact, its own cap holds, so pending requests do not refuse it), else the
 *   whole plan is refused with the reason ("refund re_1 of 4000 exceeds the 2000 remaining on
 *   payment pay_…");
 * - unknown, `failed`: inserted as failed (so a later success report does not count it);
 * - recorded `succeeded`, reported `failed`: becomes failed (the sum goes down);
 * - anything else (a repeat, a success report for a failed refund): no change.
 * `refunded` is the succeeded sum after the changes, ≤ `amount` when accepted. An inserted
 * report is passed through as given (with whatever else the caller's reports carry).
 */
export function planRefunds<T extends ReportedRefund>(
  payment: { id: string; amount: number },
  recorded: readonly RecordedRefund[],
  reports: readonly T[],
): RefundPlan<T> {
  const state = new Map<string, RecordedRefund>(recorded.map((refund) => [refund.reference, refund]));
  const changes: RefundChange<T>[] = [];
  for (const report of reports) {
    const known = state.get(report.reference) ?? pendingMatch(state, report);
    if (known?.status === 'pending') {
      if (report.status === 'succeeded') {
        const remaining = payment.amount - refundedTotal([...state.values()]);
        if (report.amount > remaining) return exceeds(report, remaining, payment.id);
      }
      state.delete(known.reference);
      state.set(report.reference, { ...report, requestId: known.requestId ?? null });
      changes.push({ action: 'settle', refund: known, report });
    } else if (known === undefined) {
      if (report.status === 'succeeded') {
        const remaining = payment.amount - refundedTotal([...state.values()]);
        if (report.amount > remaining) return exceeds(report, remaining, payment.id);
      }
      state.set(report.reference, report);
      changes.push({ action: 'insert', refund: report });
    } else if (known.status === 'succeeded' && report.status === 'failed') {
      const failed = { ...known, status: 'failed' as const };
      state.set(report.reference, failed);
      changes.push({ action: 'fail', refund: { reference: known.reference, amount: known.amount, status: 'failed' } });
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
