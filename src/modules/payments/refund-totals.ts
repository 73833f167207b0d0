// How refunds add up on a payment (SPEC §4, §5), pure. Providers report refunds one by one
// (Stripe refund.*, Paystack refund.processed) and sometimes only as a running total
// (Stripe charge.refunded). Taking the largest of what we know makes every arrival order
// end in the same state, and the cap keeps `amount_refunded` within `amount`.
import type { PaymentStatus } from './payments.table.ts';

export interface RefundFacts {
  /** The payment's amount, minor units. */
  amount: number;
  /** `amount_refunded` before this report. */
  current: number;
  /** Sum of the payment's refund records, including the ones just recorded. */
  recordedSum: number;
  /** A running total the provider reported, if any. */
  reportedTotal: number | null;
}

/** The payment's new `amount_refunded`: never lower than before, never above `amount`. */
export function refundedTotal(facts: RefundFacts): number {
  const known = Math.max(facts.current, facts.recordedSum, facts.reportedTotal ?? 0);
  return Math.min(facts.amount, known);
}

/** `refunded` when all of it went back, `partially_refunded` when some did, else `status` as it was. */
export function statusAfterRefunds(status: PaymentStatus, amount: number, refunded: number): PaymentStatus {
  if (refunded <= 0) return status;
  return refunded >= amount ? 'refunded' : 'partially_refunded';
}
