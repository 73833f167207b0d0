// POST /api/provider-events/{id}/retry: an operator reprocesses a `failed` or
// `held` event now, through the processing the request path and the worker use
// (inbox.batches.ts → inbox.processing.ts), so a retry does exactly what the
// worker's retry would, and races with it safely: every processor locks the inbox row and
// finishes it only from the status it read (inbox.ts finishInboxRow), so one of them applies
// the event and the others find it finished.
import type { Deps } from '../deps.ts';
import { AppError } from '../http/errors.ts';
import { lockPaymentByReference } from '../modules/payments/payments.references.ts';
import { lockInboxRow, updateInboxRow } from './inbox.ts';
import { type ProcessingLog, runThenProcessEvents } from './inbox.batches.ts';
import type { ProviderEventRow } from '../db/tables/provider-events.table.ts';
import { RETRYABLE_STATUSES } from './inbox.schemas.ts';
import { findProviderEventRow, type ProviderEventDetail, toDetail } from './inbox.read.ts';
import { readProviderEvent } from '../providers/registry.ts';

/** 409 `conflict` unless `row` is `failed` or `held` (the statuses a retry can change). */
function refuseUnlessRetryable(row: ProviderEventRow): void {
  if (!(RETRYABLE_STATUSES as readonly string[]).includes(row.status)) {
    throw new AppError(
      'conflict',
      `provider event ${row.id} is ${row.status}; only failed or held events can be retried`,
    );
  }
}

/**
 * The payment reference a held refund event names, or null when its body cannot be read
 * (processing will then record why).
 */
function heldPaymentReference(row: ProviderEventRow): string | null {
  try {
    const event = readProviderEvent(row.provider, () => JSON.parse(row.payload), new Date(row.received_at));
    return event.kind === 'refunds' ? event.paymentReference : null;
  } catch {
    return null;
  }
}

/**
 * Reprocesses provider event `id` now and returns it as it is after the attempt (processed,
 * still held, failed again with the new error, …). A `failed` event is made due now first,
 * in the same transaction, so a failure that the worker would no longer retry (an unusable
 * event, or one past its last attempt) is tried once more; a `held` refund is tried against
 * the payments recorded now. A failing attempt is recorded on the event like any other
 * (attempts + 1, `error`, the next retry) and logged on `log`.
 *
 * Lock order: for a held refund the payment reference's locks are taken before the inbox
 * row, as a payment's processing takes them before releasing the refunds held for it
 * (inbox.processing.ts), so the two queue instead of deadlocking.
 *
 * Throws 404 `not_found` (unknown or malformed id) or 409 `conflict` when the event is
 * `received`, `processed` or `ignored` — checked again under the row lock, so an event that
 * another processor finished meanwhile is refused and left as that processor left it.
 */
export async function retryProviderEvent(deps: Deps, id: string, log?: ProcessingLog): Promise<ProviderEventDetail> {
  const { db, clock } = deps;
  const row = await findProviderEventRow(db, id);
  refuseUnlessRetryable(row);
  const reference = row.status === 'held' ? heldPaymentReference(row) : null;
  await runThenProcessEvents(
    db,
    deps,
    async (trx) => {
      if (reference !== null) await lockPaymentByReference(trx, row.provider, reference);
      const current = await lockInboxRow(trx, id);
      if (!current) throw new Error(`provider event ${id} disappeared`);
      refuseUnlessRetryable(current);
      if (current.status === 'failed') {
        await updateInboxRow(trx, id, { next_attempt_at: clock.now().toISOString() });
      }
    },
    [{ id, log }],
    log,
  );
  return toDetail(db, await findProviderEventRow(db, id));
}
