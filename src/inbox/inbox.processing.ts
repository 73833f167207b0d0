// The hand-over from the inbox to the billing core (SPEC §5), for one stored row: read the
// event, pass it to the core by kind (payment report, refunds, link of two references), then
// finish the row — processed, ignored, or held until its payment is known — and apply the
// refunds a newly paid payment releases. The caller owns the transaction, and with it
// batching and failure isolation (inbox.batches.ts).
import type { Transaction } from 'kysely';
import type { Database } from '../db/database.ts';
import type { ProviderEventRow } from '../db/tables/provider-events.table.ts';
import { lockReferences } from '../modules/payments/payments.references.ts';
import {
  linkPaymentReferences,
  type ProcessingContext,
  recordPaymentEvent,
  recordSavedMethod,
  recordRefunds,
} from '../billing/payment-reports.ts';

import { type BatchEvent, loadPaymentBatch, referencesOf } from '../billing/payment-batch.ts';

export type { ProcessingContext };
import { type ProviderEvent, UnusableEventError } from '../providers/provider.ts';
import { withoutNul } from '../providers/provider-values.ts';
import { readProviderEvent } from '../providers/registry.ts';
import type { Clock } from '../shared/clock.ts';
import {
  finishInboxRow,
  lockHeldRows,
  lockHeldRowsOf,
  lockInboxRow,
  repointHeldRows,
  updateInboxRow,
} from './inbox.ts';
import { needsProcessing } from './inbox.status.ts';
import { retryDelayMs } from './inbox.retry-backoff.ts';

/** What processing did with a row. `skipped`: another processor had already finished it. */
export type ProcessingOutcome = 'processed' | 'ignored' | 'held' | 'failed' | 'skipped';

/**
 * Processes the locked inbox `row` inside `trx`: applies its event and moves the row to
 * `processed`, `ignored` or `held` (inbox.status.ts). `body` is the row's payload already
 * parsed, when the caller has it. Returns `skipped` for a row that no longer needs
 * processing. `read`: the row's event when the caller already read it (prepareBatch). Throws UnusableEventError when the event cannot be used (a retry cannot help),
 * AlreadyFinishedError when another processor finished the row meanwhile, or any database
 * error; the caller rolls back this row's effects and records the failure
 * (recordFailedAttempt).
 */
export async function processInboxRow(
  trx: Transaction<Database>,
  ctx: InboxContext,
  row: ProviderEventRow,
  body: unknown,
  read?: ProviderEvent,
): Promise<ProcessingOutcome> {
  if (!needsProcessing(row)) return 'skipped';
  const parseBody = () => (body === undefined ? JSON.parse(row.payload) : body);
  const event = read ?? readProviderEvent(row.provider, parseBody, new Date(row.received_at));
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
    case 'method_saved':
      await recordSavedMethod(trx, ctx, row.provider, event);
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

/** `ctx` with what the inbox read for the batch beforehand: the held rows of its payments. */
export interface InboxContext extends ProcessingContext {
  /** The held rows per payment reference (inbox.ts lockHeldRowsOf), each list taken once. */
  held?: Map<string, ProviderEventRow[]>;
}

/** A stored row about to be processed in a batch, with its payload already parsed if known. */
export interface BatchRow {
  row: ProviderEventRow;
  body: unknown;
}

/** What prepareBatch read: the context to process the batch's rows with, and their events. */
export interface PreparedBatch {
  ctx: InboxContext;
  /** The event of each row that needs processing and could be read, by row id. */
  events: Map<string, ProviderEvent>;
}

/**
 * Before a batch of stored rows is processed in `trx` (inbox.batches.ts), reads their events
 * and what the rows will ask for, for all of them at once:
 * - PostgreSQL (SPEC §5 one payment per provider payment): the advisory locks of EVERY
 *   reference the batch will read or write — payment reports', refunds' payment references,
 *   both references of a link, and the canonical references they are known aliases of — in
 *   one statement and one order (lockReferences), so that no row of the batch takes a
 *   reference lock after another batch could hold it while waiting for one of ours (a
 *   deadlock there fails rows: the link that would merge two payments of one charge among them);
 * - the payments, payers and saved cards the reports need (billing/payment-batch.ts, one
 *   statement each, under those locks), and the held refunds of those payments (one statement);
 * and returns `ctx` carrying these answers. `readAhead` false: the locks only (the batch also
 * holds rows it reads later, which could touch what the others would be answered about). A row
 * whose event cannot be read is left to processInboxRow to refuse. Errors: the database's.
 */
export async function prepareBatch(
  trx: Transaction<Database>,
  ctx: ProcessingContext,
  items: readonly BatchRow[],
  readAhead: boolean,
): Promise<PreparedBatch> {
  const events = new Map<string, ProviderEvent>();
  const batchEvents: BatchEvent[] = [];
  for (const { row, body } of items) {
    if (!needsProcessing(row)) continue;
    let event: ProviderEvent;
    try {
      const parseBody = () => (body === undefined ? JSON.parse(row.payload) : body);
      event = readProviderEvent(row.provider, parseBody, new Date(row.received_at));
    } catch {
      continue;
    }
    events.set(row.id, event);
    batchEvents.push({ provider: row.provider, event });
  }
  await lockReferences(trx, batchEvents.flatMap(referencesOf));
  if (!readAhead) return { ctx, events };
  const batch = await loadPaymentBatch(trx, batchEvents);
  const held = batch.paymentReferences.length === 0 ? undefined : await lockHeldRowsOf(trx, batch.paymentReferences);
  return { ctx: { ...ctx, batch, held }, events };
}

/** `ctx` with the inbox's held reports released by the core when their payment is paid. */
export function withHeldReports<C extends InboxContext>(ctx: C): C {
  return {
    ...ctx,
    releaseHeld: (trx, provider, reference) => releaseHeldRefunds(trx, ctx, provider, reference),
    heldReferences: async (trx, references) => {
      const held = await lockHeldRowsOf(trx, references);
      return new Set([...held].filter(([, rows]) => rows.length > 0).map(([key]) => key));
    },
  };
}

/**
 * Applies the refunds held for `reference` now that its payment succeeded: those read for the
 * batch (InboxContext.held, taken once), else read here.
 */
async function releaseHeldRefunds(
  trx: Transaction<Database>,
  ctx: InboxContext,
  provider: string,
  reference: string,
): Promise<void> {
  const key = `${provider}\u0000${reference}`;
  const preloaded = ctx.held?.get(key);
  ctx.held?.delete(key);
  for (const row of preloaded ?? (await lockHeldRows(trx, provider, reference))) {
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
