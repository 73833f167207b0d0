// The worker's part of refunds from the API (SPEC §10): a refund whose provider call got no
// usable answer (or whose caller died mid-call) is asked again once `resume_at` has come —
// looked up by our own id (Paystack's marker, Stripe's metadata.refund_id) and sent again
// only when the look-up proves the provider has none — under a lease, so a
// retry of the request and the worker never ask at once. It ends answered (still `pending`
// until the provider's event), refused (`failed`), or due again a minute later. Clock-aware
// (SPEC §11): a test clock customer's refund is resumed by its clock's advance, at its time;
// its lease is in real time, and the advance waits for a live one before `ready`.
import { AppError } from '../http/errors.ts';
import { type Job } from './job.ts';
import { REAL_TIME } from '../db/scope.ts';
import { isProviderName } from '../shared/provider-names.ts';
import {
  claimDueRefundRequests,
  dueRefundRequestsQuery,
  nextRefundResumeAt,
} from '../modules/payments/payments.refund-requests.ts';
import { refundClock, refundLeaseMs, resolveRefund } from '../billing/refunds.ts';
import { resumeLapsedRefunds } from '../billing/refunds.lapsed.ts';

const BATCH_SIZE = 10;

/** Resolves up to BATCH_SIZE due refunds of the scope without a provider answer; returns how many it took. */
export const resolveUnknownRefunds: Job = {
  name: 'resolve_unknown_refunds',
  batchSize: BATCH_SIZE,
  async run(deps, scope = REAL_TIME, log) {
    const refunds = await claimDueRefundRequests(deps.db, deps.clock, BATCH_SIZE, refundLeaseMs(deps), scope);
    for (const refund of refunds) {
      const payment = await deps.db
        .selectFrom('payments')
        .select('provider_reference')
        .where('id', '=', refund.payment_id)
        .executeTakeFirst();
      // Only paystack/stripe payments get API refunds (a merge moves refunds with their payment).
      if (!payment || !isProviderName(refund.provider)) continue;
      const call = {
        refund,
        provider: refund.provider,
        paymentReference: payment.provider_reference,
        resumed: true,
        clock: await refundClock(deps.db, deps, refund),
      };
      try {
        await resolveRefund(deps, call);
      } catch (error) {
        // Refused (now `failed`) or still no answer (due again): recorded on the refund.
        if (error instanceof AppError) continue;
        // Anything else is this refund's alone: the others of the batch go on, and it is
        // taken again when its lease ends.
        log?.error({ err: error, job: 'resolve_unknown_refunds', refundId: refund.id }, 'refund resume failed');
      }
    }
    return refunds.length;
  },
  dueNow: (deps) => dueRefundRequestsQuery(deps.db, deps.clock.now().toISOString()),
  nextDueAt: (deps, scope, after) => nextRefundResumeAt(deps.db, scope, after),
  // A dead caller's refunds of a test clock, before its advance ends (SPEC §11).
  resumeLapsed: resumeLapsedRefunds,
};
