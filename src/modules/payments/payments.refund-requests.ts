// Refunds requested through the API (SPEC §10 "Refunds from the API"): the payments module's
// writes for them. A request is a `pending` refund row committed BEFORE the provider is called
// (startRefundRequest, holding the call's lease), then given the provider's answer
// (recordRefundAnswer), its refusal (refuseRefundRequest) or no usable answer
// (markRefundUnknown: due again at `resume_at`). Whoever calls the provider again — a retry of
// the request, the worker — first takes the lease (claimRefundRequest, claimDueRefundRequests),
// so two callers never ask the provider for one refund at once. The provider's event settles the row later, through
// recordRefundReports (payments.recording.ts), never as a second refund. Nothing here calls a
// provider (billing/refunds.ts does).
import type { Kysely, Transaction } from 'kysely';
import { addToCount } from '../../db/counts.ts';
import { claimRows } from '../../db/locking.ts';
import type { Database } from '../../db/database.ts';
import { transactionWithRetry } from '../../db/transaction.ts';
import { type Clock, realClockOf } from '../../shared/clock.ts';
import { newId } from '../../shared/ids.ts';
import type { PaymentRow, RefundRow } from '../../db/tables/payments.table.ts';
import { refundableAmount } from './payments.refund-totals.ts';
import { earliest, type JobScope, REAL_TIME, whereInScope } from '../../db/scope.ts';

/** Payment `paymentId`'s refunds as payments.refund-totals.ts reads them (reference, amount, status). */
export async function refundFactsOf(trx: Transaction<Database>, paymentId: string) {
  const rows = await trx
    .selectFrom('refunds')
    .select(['provider_reference', 'amount', 'status'])
    .where('payment_id', '=', paymentId)
    .execute();
  return rows.map((row) => ({ reference: row.provider_reference, amount: Number(row.amount), status: row.status }));
}

/**
 * What may still be refunded on `payment` (locked by the caller), minor units, with the sums
 * it was computed from: `amount` − succeeded − pending (payments.refund-totals.ts refundableAmount).
 */
export async function refundableOf(
  trx: Transaction<Database>,
  payment: PaymentRow,
): Promise<{ refundable: number; refunded: number; pending: number }> {
  const facts = await refundFactsOf(trx, payment.id);
  const amount = Number(payment.amount);
  const refundable = refundableAmount(amount, facts);
  let pending = 0;
  for (const fact of facts) if (fact.status === 'pending') pending += fact.amount;
  return { refundable, refunded: Number(payment.amount_refunded), pending };
}

/** The API refund made for request `requestKey` (see RefundsTable.request_key), if any. */
export async function findRefundRequest(db: Kysely<Database>, requestKey: string): Promise<RefundRow | undefined> {
  return db.selectFrom('refunds').selectAll().where('request_key', '=', requestKey).executeTakeFirst();
}

/** One refund by id (any handle). */
export async function findRefundRow(db: Kysely<Database>, id: string): Promise<RefundRow | undefined> {
  return db.selectFrom('refunds').selectAll().where('id', '=', id).executeTakeFirst();
}

/**
 * Inserts a `pending` refund of `amount` (minor units, > 0, already checked against what may
 * still be refunded) on `payment` (locked by the caller) in `trx`, and counts it. Its
 * `provider_reference` is its own id until the provider names the refund. No event: the
 * provider's settles it (`payment.refunded` / `payment.refund_failed`). The caller commits it
 * before calling the provider. Stamped with `clock` (a test clock's time, SPEC §11), but its
 * lease (`claimed_until`) ends in real time: the provider call it guards takes real time
 * however far an advance moves the clock.
 */
export async function startRefundRequest(
  trx: Transaction<Database>,
  clock: Clock,
  payment: PaymentRow,
  request: { amount: number; reason: string | null; requestKey: string | null; leaseMs: number },
): Promise<RefundRow> {
  const id = newId('refund');
  const at = clock.now();
  const now = at.toISOString();
  // The request's own call holds the lease; were it to die mid-call, the worker resumes the
  // refund once the lease has passed (real time) and `resume_at` has come (the clock's).
  const leaseEnd = new Date(realClockOf(clock).now().getTime() + request.leaseMs).toISOString();
  const resumeAt = new Date(at.getTime() + request.leaseMs).toISOString();
  const row: RefundRow = {
    id,
    payment_id: payment.id,
    provider: payment.provider,
    provider_reference: id,
    amount: request.amount,
    currency: payment.currency,
    status: 'pending',
    refunded_at: null,
    created_at: now,
    updated_at: now,
    reason: request.reason,
    provider_refund_id: null,
    request_key: request.requestKey,
    failure_reason: null,
    claimed_until: leaseEnd,
    resume_at: resumeAt,
    // A test clock's time stamps the row (SPEC §11): the job resolving it runs in that scope.
    test_clock_id: clock.testClockId ?? null,
  };
  await trx.insertInto('refunds').values(row).execute();
  await addToCount(trx, 'refunds', 1);
  return row;
}

/**
 * The provider accepted refund `refund` and named it `providerRefundId`: kept, and — while no
 * event has named the refund yet (its `provider_reference` is still our id) and no other
 * refund of the provider carries that id — it becomes the `provider_reference` events are
 * matched by. The status stays as it is (the event settles it). Returns the row after.
 */
export async function recordRefundAnswer(
  db: Kysely<Database>,
  clock: Clock,
  refund: RefundRow,
  providerRefundId: string,
): Promise<RefundRow> {
  const now = clock.now().toISOString();
  await transactionWithRetry(db, async (trx) => {
    await trx
      .updateTable('refunds')
      .set({ provider_refund_id: providerRefundId, claimed_until: null, resume_at: null, updated_at: now })
      .where('id', '=', refund.id)
      .execute();
    const taken = await trx
      .selectFrom('refunds')
      .select('id')
      .where('provider', '=', refund.provider)
      .where('provider_reference', '=', providerRefundId)
      .executeTakeFirst();
    if (!taken) {
      await trx
        .updateTable('refunds')
        .set({ provider_reference: providerRefundId })
        .where('id', '=', refund.id)
        .where('provider_reference', '=', refund.id)
        .execute();
    }
  });
  return (await findRefundRow(db, refund.id))!;
}

/**
 * The provider refused refund request `refund` (a 4xx: the request or our key): it becomes
 * `failed` with `failureReason`, freeing its amount — unless an event settled it meanwhile.
 * No event: the API's 422 tells the client. Returns the row after.
 */
export async function refuseRefundRequest(
  db: Kysely<Database>,
  clock: Clock,
  refund: RefundRow,
  failureReason: string,
): Promise<RefundRow> {
  await db
    .updateTable('refunds')
    .set({
      status: 'failed',
      failure_reason: failureReason,
      claimed_until: null,
      resume_at: null,
      updated_at: clock.now().toISOString(),
    })
    .where('id', '=', refund.id)
    .where('status', '=', 'pending')
    .execute();
  return (await findRefundRow(db, refund.id))!;
}

/**
 * No usable answer for refund `refund`: the lease is given back and the worker asks the
 * provider again at `resumeAt` (ISO 8601), unless a retry of the request does first.
 */
export async function markRefundUnknown(
  db: Kysely<Database>,
  clock: Clock,
  refund: RefundRow,
  resumeAt: string,
): Promise<void> {
  await db
    .updateTable('refunds')
    .set({ claimed_until: null, resume_at: resumeAt, updated_at: clock.now().toISOString() })
    .where('id', '=', refund.id)
    .where('provider_refund_id', 'is', null)
    .execute();
}

/**
 * Takes the lease of refund `refund` for `leaseMs` (real time, whatever `clock`) when it is
 * still `pending` without a provider answer and nobody holds it (a retry of its request).
 * Returns false when another caller is asking the provider right now, or the refund no
 * longer needs asking.
 */
export async function claimRefundRequest(
  db: Kysely<Database>,
  clock: Clock,
  refund: RefundRow,
  leaseMs: number,
): Promise<boolean> {
  const at = realClockOf(clock).now();
  const now = at.toISOString();
  const result = await db
    .updateTable('refunds')
    .set({ claimed_until: new Date(at.getTime() + leaseMs).toISOString() })
    .where('id', '=', refund.id)
    .where('status', '=', 'pending')
    .where('provider_refund_id', 'is', null)
    .where((eb) => eb.or([eb('claimed_until', 'is', null), eb('claimed_until', '<=', now)]))
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/**
 * Pending refunds of `scope` without a provider answer whose `resume_at` has come at `now`
 * (ISO 8601, the scope's time) and whose lease (if any) has passed at `realNow` (real time;
 * the same as `now` for real-time refunds), oldest due first: what claimDueRefundRequests
 * claims, and the worker's due probe (worker/job.ts `dueNow`).
 */
export function dueRefundRequestsQuery(
  db: Kysely<Database>,
  now: string,
  scope: JobScope = REAL_TIME,
  realNow: string = now,
) {
  return whereInScope(
    db
      .selectFrom('refunds')
      .selectAll()
      .where('resume_at', '<=', now)
      .where('status', '=', 'pending')
      .where('provider_refund_id', 'is', null)
      .where((eb) => eb.or([eb('claimed_until', 'is', null), eb('claimed_until', '<=', realNow)]))
      .orderBy('resume_at')
      .orderBy('id'),
    'refunds.test_clock_id',
    scope,
  );
}

/**
 * The worker's claim (SPEC §7: SKIP LOCKED and a lease): up to `limit` pending refunds of
 * `scope` (real time, or one test clock's: SPEC §11) without a provider answer whose
 * `resume_at` has come at `clock`'s now and whose lease (if any) has passed in real time,
 * oldest due first, each leased for `leaseMs` of real time. Returns them as claimed.
 */
export async function claimDueRefundRequests(
  db: Kysely<Database>,
  clock: Clock,
  limit: number,
  leaseMs: number,
  scope: JobScope = REAL_TIME,
): Promise<RefundRow[]> {
  const now = clock.now().toISOString();
  const realAt = realClockOf(clock).now();
  const leaseEnd = new Date(realAt.getTime() + leaseMs).toISOString();
  return transactionWithRetry(db, async (trx) => {
    const due = dueRefundRequestsQuery(trx, now, scope, realAt.toISOString());
    const rows = await claimRows(due.limit(limit), trx).execute();
    if (rows.length === 0) return [];
    await trx
      .updateTable('refunds')
      .set({ claimed_until: leaseEnd })
      .where(
        'id',
        'in',
        rows.map((row) => row.id),
      )
      .execute();
    return rows.map((row) => ({ ...row, claimed_until: leaseEnd }));
  });
}

/**
 * The earliest `resume_at` strictly after `after` of a pending refund of `scope` still
 * without a provider answer (the instant claimDueRefundRequests would first take it), or
 * null: a test clock's advance steps to it (SPEC §11).
 */
export async function nextRefundResumeAt(db: Kysely<Database>, scope: JobScope, after: Date): Promise<Date | null> {
  const row = await whereInScope(
    db
      .selectFrom('refunds')
      .select((eb) => eb.fn.min('resume_at').as('due'))
      .where('status', '=', 'pending')
      .where('provider_refund_id', 'is', null)
      .where('resume_at', '>', after.toISOString()),
    'refunds.test_clock_id',
    scope,
  ).executeTakeFirst();
  return earliest([row?.due as string | null | undefined]);
}

/**
 * Test clock `testClockId`'s pending refunds without a provider answer under a lease
 * (`claimed_until`, real time): a caller asking the provider, or one that died doing so.
 * Read by the clock's advance before it ends `ready` (billing/refunds.lapsed.ts).
 */
export async function findLeasedRefundsOfClock(
  db: Kysely<Database>,
  testClockId: string,
): Promise<Pick<RefundRow, 'id' | 'claimed_until' | 'resume_at'>[]> {
  return db
    .selectFrom('refunds')
    .select(['id', 'claimed_until', 'resume_at'])
    .where('test_clock_id', '=', testClockId)
    .where('status', '=', 'pending')
    .where('provider_refund_id', 'is', null)
    .where('claimed_until', 'is not', null)
    .orderBy('id')
    .execute();
}

/**
 * Makes refunds `ids` due at `now` (ISO 8601, their clock's time) where they are still pending
 * without a provider answer, their lease has lapsed at `realNow` (real time) and `resume_at`
 * is later (or none): one conditional statement, so a caller that answered or took the lease
 * since the read is left alone. Returns how many it moved.
 */
export async function resumeLapsedRefundsAt(
  db: Kysely<Database>,
  ids: readonly string[],
  now: string,
  realNow: string,
): Promise<number> {
  if (ids.length === 0) return 0;
  const result = await db
    .updateTable('refunds')
    .set({ resume_at: now })
    .where('id', 'in', ids)
    .where('status', '=', 'pending')
    .where('provider_refund_id', 'is', null)
    .where('claimed_until', '<=', realNow)
    .where((eb) => eb.or([eb('resume_at', 'is', null), eb('resume_at', '>', now)]))
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}
