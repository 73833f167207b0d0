// Processing stored events (SPEC §5): each inbox row's effects and the row's own "processed"
// mark commit in one transaction, so they happen exactly once. Rows run in a savepoint each,
// so one failing row is rolled back alone and recorded as failed (retried by the worker
// unless a retry cannot help), while the others in the batch commit.
import type { Kysely, Transaction } from 'kysely';
import { isPostgres } from '../../db/column-types.ts';
import type { Database } from '../../db/database.ts';
import type { Config } from '../../config.ts';
import type { Clock } from '../../shared/clock.ts';
import { repointCasePayments } from '../dunning/dunning.cases.ts';
import { lockPaymentByReference, recordPaymentReport, recordRefunds } from '../payments/payments.ledger.ts';
import { lockPaymentLink, recordPaymentLink } from '../payments/payments.references.ts';
import { lockSubscription } from '../subscriptions/subscriptions.lifecycle.ts';
import { applyFailedPayment, applySuccessfulPayment } from '../subscriptions/subscriptions.payments.ts';
import { attributePayment } from './attribution.ts';
import {
  AlreadyFinishedError,
  finishInboxRow,
  lockHeldRows,
  lockInboxRow,
  repointHeldRows,
  updateInboxRow,
} from './inbox.ts';
import { type ProviderEvent, UnusableEventError } from './provider.ts';
import type { ProviderEventRow } from './provider-events.table.ts';
import { rejectNul, withoutNul } from './provider-values.ts';
import { findProvider } from './providers/index.ts';
import { retryDelayMs } from './retry-backoff.ts';

/** What processing needs besides the database: the clock, and config for dunning (Deps fits). */
export interface ProcessingContext {
  clock: Clock;
  config: Readonly<Config>;
}

/** What processing did with a row. `skipped`: another processor had already finished it. */
export type Outcome = 'processed' | 'ignored' | 'held' | 'failed' | 'skipped';

/** Where processing reports failures (a pino logger fits). */
export interface ProcessingLog {
  warn(object: object, message: string): void;
  error(object: object, message: string): void;
}

/** A row to process, with its already-parsed body when the caller has it (saves a parse). */
export interface ProcessItem {
  id: string;
  /** The row as stored, when the caller just stored it (saves reading it back). */
  row?: ProviderEventRow;
  body?: unknown;
  /** Where to report this row's failure (e.g. its request's logger); else the batch's log. */
  log?: ProcessingLog;
}

const MAX_ERROR_LENGTH = 1000;

function errorText(error: unknown): string {
  const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  // A reason may quote the provider's text; the inbox must be able to store it.
  return withoutNul(text).slice(0, MAX_ERROR_LENGTH);
}

type PaymentEvent = Extract<ProviderEvent, { kind: 'payment_succeeded' | 'payment_failed' }>;
type RefundEvent = Extract<ProviderEvent, { kind: 'refunds' }>;
type LinkEvent = Extract<ProviderEvent, { kind: 'payment_linked' }>;

/**
 * Our reading of a verified body, for every provider: the adapter's, with the rules that
 * hold whatever the provider. A NUL in the body makes it unusable (provider-values
 * rejectNul). A payment of 0, succeeded or failed (a Stripe trial or fully credited
 * invoice, Stripe's dashboard test failure, a Paystack card authorization), moves no money
 * and owes none: it is ignored, so it neither renews a subscription nor opens dunning.
 */
function readEvent(row: ProviderEventRow, body: unknown): ProviderEvent {
  const adapter = findProvider(row.provider);
  if (!adapter) throw new UnusableEventError(`unknown provider ${row.provider}`);
  const parsed = body === undefined ? JSON.parse(row.payload) : body;
  rejectNul(parsed);
  const event = adapter.normalize(parsed, new Date(row.received_at));
  if ((event.kind === 'payment_succeeded' || event.kind === 'payment_failed') && event.payment.amount === 0) {
    return { kind: 'ignored', reason: 'zero-amount payment' };
  }
  return event;
}

/**
 * A payment report: record it (one payment per provider reference), attribute it, and
 * move the subscription — success activates/renews, failure marks past_due (dunning hooks
 * in there) — exactly when the payment changed in a way that matters to it.
 */
async function applyPaymentEvent(
  trx: Transaction<Database>,
  ctx: ProcessingContext,
  provider: string,
  event: PaymentEvent,
): Promise<void> {
  const { clock } = ctx;
  const report = event.payment;
  const existing = await lockPaymentByReference(trx, provider, report.reference);
  const needsAttribution = !existing || existing.customer_id === null || existing.subscription_id === null;
  const who = needsAttribution
    ? await attributePayment(trx, clock, provider, report)
    : { customerId: null, subscriptionId: null, planCurrency: null };
  // The report's own currency first: the ledger refuses one that differs from the payment's.
  const currency = report.currency ?? existing?.currency ?? who.planCurrency;
  if (currency === null) {
    throw new UnusableEventError('currency is missing and no subscription plan names one');
  }
  // Lock the subscription(s) this payment may move before its event takes the shared event
  // counter: the subscription routes lock the row first too, so the two cannot deadlock.
  const subscriptionIds = new Set(
    [existing?.subscription_id, who.subscriptionId].filter((id): id is string => typeof id === 'string'),
  );
  for (const id of [...subscriptionIds].sort()) await lockSubscription(trx, id);
  const status = event.kind === 'payment_succeeded' ? 'succeeded' : 'failed';
  const change = await recordPaymentReport(
    trx,
    clock,
    existing,
    {
      provider,
      reference: report.reference,
      amount: report.amount,
      currency,
      failureReason: report.failureReason,
      occurredAt: report.occurredAt,
      customerId: who.customerId,
      subscriptionId: who.subscriptionId,
    },
    status,
  );
  const { payment } = change;
  if (payment.subscription_id !== null) {
    const facts = {
      paymentId: payment.id,
      amount: payment.amount,
      currency: payment.currency,
      occurredAt: report.occurredAt,
    };
    if (status === 'succeeded' && (change.becameSucceeded || change.subscriptionAttached)) {
      await applySuccessfulPayment(trx, ctx, payment.subscription_id, facts);
    }
    if (status === 'failed' && (change.becameFailed || change.subscriptionAttached)) {
      await applyFailedPayment(trx, ctx, payment.subscription_id, facts);
    }
  }
  if (change.becameSucceeded) await releaseHeldRefunds(trx, ctx, provider, payment.provider_reference);
}

/**
 * Two references of one payment (Stripe `invoice_payment.paid`): from now on both land on
 * one payment, and payments already recorded under each become one (payments.references.ts).
 * The subscription moves only if the merged payment owes it an effect no report applied
 * (SPEC §5: one period, one dunning attempt per provider payment). Refused (UnusableEventError,
 * nothing written) when the two cannot be one payment.
 */
async function applyPaymentLink(
  trx: Transaction<Database>,
  ctx: ProcessingContext,
  provider: string,
  event: LinkEvent,
): Promise<void> {
  const link = await lockPaymentLink(trx, provider, event.reference, event.canonicalReference);
  if (link.conflict !== null) throw new UnusableEventError(link.conflict);
  const subscriptionIds = new Set(
    [link.aliasPayment?.subscription_id, link.canonicalPayment?.subscription_id].filter(
      (id): id is string => typeof id === 'string',
    ),
  );
  for (const id of [...subscriptionIds].sort()) await lockSubscription(trx, id);
  const { payment, mergedPaymentId, owedEffect } = await recordPaymentLink(trx, ctx.clock, link);
  await repointHeldRows(trx, provider, event.reference, event.canonicalReference);
  if (!payment) return;
  if (mergedPaymentId !== null) await repointCasePayments(trx, ctx.clock, mergedPaymentId, payment.id);
  if (payment.subscription_id !== null && owedEffect !== null) {
    const facts = { paymentId: payment.id, amount: payment.amount, currency: payment.currency };
    // The success owed is the paid report's, at its provider time (`paid_at`), so a stale
    // failure arriving later is still recognised as older. A failed row keeps no provider
    // time: its owed failure counts as the newest report.
    const paidAt = payment.paid_at ?? undefined;
    if (owedEffect === 'succeeded') await applySuccessfulPayment(trx, ctx, payment.subscription_id, { ...facts, occurredAt: paidAt });
    else await applyFailedPayment(trx, ctx, payment.subscription_id, facts);
  }
  if (payment.status !== 'failed') await releaseHeldRefunds(trx, ctx, provider, payment.provider_reference);
}

/**
 * Refund reports (succeeded or failed). Returns the payment reference to wait for when its
 * payment is not recorded (or not paid) yet: the row is held and applied when the payment
 * succeeds, so any arrival order ends in the same state. Throws UnusableEventError when a
 * refund's currency differs from the payment's, or the ledger refuses the reports (a refund
 * beyond what remains of the payment): nothing is written and the inbox row keeps the reason.
 */
async function applyRefundEvent(
  trx: Transaction<Database>,
  clock: Clock,
  provider: string,
  event: RefundEvent,
): Promise<string | null> {
  const payment = await lockPaymentByReference(trx, provider, event.paymentReference);
  if (!payment || payment.status === 'failed') return event.paymentReference;
  for (const { currency } of event.refunds) {
    if (currency !== payment.currency) {
      throw new UnusableEventError(
        `refund currency ${currency} differs from the payment's ${payment.currency}`,
      );
    }
  }
  const outcome = await recordRefunds(trx, clock, payment, event.refunds);
  if (outcome.refused) throw new UnusableEventError(outcome.reason);
  return null;
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
      await processRow(trx, ctx, row, undefined);
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

/** True when `row` still needs processing (a retry, or a held refund being released). */
function isPending(row: ProviderEventRow): boolean {
  return (
    row.status === 'received' || row.status === 'held' || (row.status === 'failed' && row.next_attempt_at !== null)
  );
}

/** Processes one locked row inside `trx`: its effects and its new status. */
async function processRow(
  trx: Transaction<Database>,
  ctx: ProcessingContext,
  row: ProviderEventRow,
  body: unknown,
): Promise<Outcome> {
  if (!isPending(row)) return 'skipped';
  const event = readEvent(row, body);
  const now = ctx.clock.now().toISOString();
  const done = { processed_at: now, attempts: row.attempts + 1, error: null, next_attempt_at: null, held_reference: null };
  switch (event.kind) {
    case 'ignored':
      await finishInboxRow(trx, row.id, row.status, { ...done, status: 'ignored' });
      return 'ignored';
    case 'payment_succeeded':
    case 'payment_failed':
      await applyPaymentEvent(trx, ctx, row.provider, event);
      break;
    case 'payment_linked':
      await applyPaymentLink(trx, ctx, row.provider, event);
      break;
    case 'refunds': {
      const waitFor = await applyRefundEvent(trx, ctx.clock, row.provider, event);
      if (waitFor !== null) {
        await finishInboxRow(trx, row.id, row.status, {
          status: 'held',
          held_reference: waitFor,
          attempts: row.attempts + 1,
          error: null,
          next_attempt_at: null,
        });
        return 'held';
      }
      break;
    }
  }
  await finishInboxRow(trx, row.id, row.status, { ...done, status: 'processed' });
  return 'processed';
}

/**
 * Records a failed attempt on row `id` (inside `trx`, after its savepoint was rolled back):
 * an UnusableEventError is final (no retry); anything else is retried with backoff.
 */
async function recordFailure(
  trx: Transaction<Database>,
  clock: Clock,
  id: string,
  error: unknown,
): Promise<void> {
  const row = await lockInboxRow(trx, id);
  if (!row) return;
  const attempts = row.attempts + 1;
  const delay = error instanceof UnusableEventError ? null : retryDelayMs(attempts);
  await updateInboxRow(trx, id, {
    status: 'failed',
    error: errorText(error),
    attempts,
    next_attempt_at: delay === null ? null : new Date(clock.now().getTime() + delay).toISOString(),
  });
}

/** Processes each item in `trx`; any failure throws (the caller rolls back). */
async function processAll(
  trx: Transaction<Database>,
  ctx: ProcessingContext,
  items: readonly ProcessItem[],
): Promise<Outcome[]> {
  const outcomes: Outcome[] = [];
  // On PostgreSQL every processor locks the row first, so a request, a redelivery and a
  // worker handling one row queue behind each other (the later ones then skip it). SQLite
  // runs one writer at a time, so a row the caller just stored needs no reading back.
  const lockFirst = isPostgres(trx);
  for (const item of items) {
    const row = item.row && !lockFirst ? item.row : await lockInboxRow(trx, item.id);
    outcomes.push(row ? await processRow(trx, ctx, row, item.body) : 'skipped');
  }
  return outcomes;
}

/** Processes each item in its own savepoint: a failing item rolls back alone and is recorded. */
async function processIsolated<T>(
  db: Kysely<Database>,
  ctx: ProcessingContext,
  before: (trx: Transaction<Database>) => Promise<T>,
  items: readonly ProcessItem[],
  log: ProcessingLog | undefined,
): Promise<[T, Outcome[]]> {
  const trx = await db.startTransaction().execute();
  const outcomes: Outcome[] = [];
  try {
    const head = await before(trx);
    for (const item of items) {
      const savepoint = await trx.savepoint('event').execute();
      try {
        outcomes.push(...(await processAll(savepoint, ctx, [item])));
        await savepoint.releaseSavepoint('event').execute();
      } catch (error) {
        await savepoint.rollbackToSavepoint('event').execute();
        await savepoint.releaseSavepoint('event').execute();
        if (error instanceof AlreadyFinishedError) {
          outcomes.push('skipped');
          continue;
        }
        await recordFailure(trx, ctx.clock, item.id, error);
        const itemLog = item.log ?? log;
        if (error instanceof UnusableEventError) {
          itemLog?.warn({ providerEventId: item.id, reason: error.message }, 'provider event cannot be used');
        } else {
          itemLog?.error({ err: error, providerEventId: item.id }, 'provider event processing failed');
        }
        outcomes.push('failed');
      }
    }
    await trx.commit().execute();
    return [head, outcomes];
  } catch (error) {
    await trx.rollback().execute().catch(() => {});
    throw error;
  }
}

/**
 * Runs `before` and then processes `items` in ONE transaction, and commits. Returns what
 * `before` returned and one Outcome per item. The common case (nothing fails) runs as one
 * plain transaction; if anything throws, it is rolled back and run again with a savepoint
 * per item, so a failing item is rolled back alone and recorded `failed` (logged on its
 * `log`) while the rest commits. Throws when `before` or the transaction itself fails
 * (then nothing committed, and the items stay due for the worker).
 */
export async function processEventsAfter<T>(
  db: Kysely<Database>,
  ctx: ProcessingContext,
  before: (trx: Transaction<Database>) => Promise<T>,
  items: readonly ProcessItem[],
  log?: ProcessingLog,
): Promise<[T, Outcome[]]> {
  try {
    return await db.transaction().execute(async (trx) => {
      const head = await before(trx);
      return [head, await processAll(trx, ctx, items)] as [T, Outcome[]];
    });
  } catch (error) {
    if (items.length === 0) throw error;
    return processIsolated(db, ctx, before, items, log);
  }
}

/** Processes inbox rows and commits; see processEventsAfter. */
export async function processEvents(
  db: Kysely<Database>,
  ctx: ProcessingContext,
  items: readonly ProcessItem[],
  log?: ProcessingLog,
): Promise<Outcome[]> {
  if (items.length === 0) return [];
  const [, outcomes] = await processEventsAfter(db, ctx, async () => undefined, items, log);
  return outcomes;
}
