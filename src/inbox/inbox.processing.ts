// The hand-over from the inbox to the billing core (SPEC §5), for one stored row: read the
// event, pass it to the core by kind (payment report, refunds, link of two references), then
// finish the row — processed, ignored, or held until its payment is known — and apply the
// refunds a newly paid payment releases. The caller owns the transaction, and with it
// batching and failure isolation (inbox.batches.ts).
import type { Transaction } from 'kysely';
import { isPostgres } from '../db/column-types.ts';
import type { Database } from '../db/database.ts';
import type { ProviderEventRow } from '../db/tables/provider-events.table.ts';
import { lockReferences } from '../modules/payments/payments.references.ts';
import {
  linkPaymentReferences,
  type ProcessingContext,
  recordPaymentEvent,
  recordRefunds,
} from '../billing/payment-reports.ts';

export type { ProcessingContext };
import { type ProviderEvent, UnusableEventError } from '../providers/provider.ts';
import { withoutNul } from '../providers/provider-values.ts';
import { readProviderEvent } from '../providers/registry.ts';
import type { Clock } from '../shared/clock.ts';
import { finishInboxRow, lockHeldRows, lockInboxRow, repointHeldRows, updateInboxRow } from './inbox.ts';
import { needsProcessing } from './inbox.status.ts';
import { retryDelayMs } from './inbox.retry-backoff.ts';

/** What processing did with a row. `skipped`: another processor had already finished it. */
export type ProcessingOutcome = 'processed' | 'ignored' | 'held' | 'failed' | 'skipped';

/**
 * Processes the locked inbox `row` inside `trx`: applies its event and moves the row to
 * `processed`, `ignored` or `held` (inbox.status.ts). `body` is the row's payload already
 * parsed, when the caller has it. Returns `skipped` for a row that no longer needs
 * processing. Throws UnusableEventError when the event cannot be used (a retry cannot help),
 * AlreadyFinishedError when another processor finished the row meanwhile, or any database
 * error; the caller rolls back this row's effects and records the failure
 * (recordFailedAttempt).
 */
export async function processInboxRow(
  trx: Transaction<Database>,
  ctx: ProcessingContext,
  row: ProviderEventRow,
  body: unknown,
): Promise<ProcessingOutcome> {
  if (!needsProcessing(row)) return 'skipped';
  const parseBody = () => (body === undefined ? JSON.parse(row.payload) : body);
  const event = readProviderEvent(row.provider, parseBody, new Date(row.received_at));
  const now = ctx.clock.now().toISOString();
  const done = {
    processed_at: now,
    attempts: row.attempts + 1,
    error: null,
    next_attempt_at: null,
    held_reference: null,
  };
  switch (event.kind) {
    case 'ignored':
      await finishInboxRow(trx, row.id, row.status, { ...done, status: 'ignored' });
      return 'ignored';
    case 'payment_succeeded':
    case 'payment_failed':
      await recordPaymentEvent(trx, withHeldReports(ctx), row.provider, event);
      break;
    case 'payment_linked':
      // Held reports of the alias wait for the canonical reference from now on.
      await repointHeldRows(trx, row.provider, event.reference, event.canonicalReference);
      await linkPaymentReferences(trx, withHeldReports(ctx), row.provider, event);
      break;
    case 'refunds': {
      const waitFor = await recordRefunds(trx, ctx, row.provider, event);
      if (waitFor !== null) {
        const held = { attempts: row.attempts + 1, error: null, next_attempt_at: null };
        await finishInboxRow(trx, row.id, row.status, { ...held, status: 'held', held_reference: waitFor });
        return 'held';
      }
      break;
    }
  }
  await finishInboxRow(trx, row.id, row.status, { ...done, status: 'processed' });
  return 'processed';
}

/**
 * Records a failed attempt on row `id` (inside `trx`, after the attempt's effects were
 * rolled back): an UnusableEventError is final (no retry); anything else is retried with
 * backoff (inbox.retry-backoff.ts) at `next_attempt_at`.
 */
export async function recordFailedAttempt(
  trx: Transaction<Database>,
  clock: Clock,
  id: string,
  error: unknown,
): Promise<void> {
  const row = await lockInboxRow(trx, id);
  // The failed attempt's savepoint was rolled back, which on PostgreSQL also released its
  // lock on the row: another processor may have finished the row since. Its outcome stands.
  if (!row || !needsProcessing(row)) return;
  const attempts = row.attempts + 1;
  const delay = error instanceof UnusableEventError ? null : retryDelayMs(attempts);
  await updateInboxRow(trx, id, {
    status: 'failed',
    error: errorText(error),
    attempts,
    next_attempt_at: delay === null ? null : new Date(clock.now().getTime() + delay).toISOString(),
  });
}

/**
 * PostgreSQL (SPEC §5 one payment per provider payment): for a batch of stored rows about to
 * be processed in `trx` (inbox.batches.ts), takes the advisory locks of EVERY reference the
 * batch will read or write — payment reports', refunds' payment references, both references
 * of a link, and the canonical references they are known aliases of — in one statement and
 * one order (lockReferences), so that no row of the batch takes a reference lock after
 * another batch could hold it while waiting for one of ours (a deadlock there fails rows: the
 * link that would merge two payments of one charge among them). A row whose event cannot be
 * read is left to processInboxRow to refuse. Does nothing on SQLite.
 */
export async function lockBatchReferences(
  trx: Transaction<Database>,
  items: readonly { row: ProviderEventRow; body: unknown }[],
): Promise<void> {
  if (!isPostgres(trx) || items.length < 2) return;
  const references: { provider: string; reference: string }[] = [];
  for (const { row, body } of items) {
    if (!needsProcessing(row)) continue;
    let event: ProviderEvent;
    try {
      const parseBody = () => (body === undefined ? JSON.parse(row.payload) : body);
      event = readProviderEvent(row.provider, parseBody, new Date(row.received_at));
    } catch {
      continue;
    }
    const provider = row.provider;
    if (event.kind === 'refunds') references.push({ provider, reference: event.paymentReference });
    if (event.kind === 'payment_linked') {
      references.push({ provider, reference: event.reference }, { provider, reference: event.canonicalReference });
    }
    if (event.kind === 'payment_succeeded' || event.kind === 'payment_failed') {
      references.push({ provider, reference: event.payment.reference });
    }
  }
  await lockReferences(trx, references);
}

/** `ctx` with the inbox's held reports released by the core when their payment is paid. */
export function withHeldReports<C extends ProcessingContext>(ctx: C): C {
  return { ...ctx, releaseHeld: (trx, provider, reference) => releaseHeldRefunds(trx, ctx, provider, reference) };
}

/** Applies the refunds held for `reference` now that its payment succeeded. */
async function releaseHeldRefunds(
  trx: Transaction<Database>,
  ctx: ProcessingContext,
  provider: string,
  reference: string,
): Promise<void> {
  for (const row of await lockHeldRows(trx, provider, reference)) {
    try {
      await processInboxRow(trx, ctx, row, undefined);
    } catch (error) {
      // Validation fails before any write, so the payment's own processing goes on.
      if (!(error instanceof UnusableEventError)) throw error;
      await updateInboxRow(trx, row.id, {
        status: 'failed',
        error: errorText(error),
        attempts: row.attempts + 1,
        held_reference: null,
        next_attempt_at: null,
      });
    }
  }
}

const MAX_ERROR_LENGTH = 1000;

/** The error as the inbox row keeps it (`Name: message`). */
function errorText(error: unknown): string {
  const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  // A reason may quote the provider's text; the inbox must be able to store it.
  return withoutNul(text).slice(0, MAX_ERROR_LENGTH);
}
