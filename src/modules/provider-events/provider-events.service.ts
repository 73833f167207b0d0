// What a provider event does (SPEC §5), for one stored inbox row, top to bottom. The path
// before it: notify.routes.ts verifies the signature (providers/) → receiver.ts stores the
// row (inbox.ts) → here: read the event → by kind, record a payment (attribute, lock the
// subscriptions, record, move the subscription, release held refunds), refunds, a link of
// two references, or nothing → finish the row (inbox-status.ts). The caller owns the
// transaction, and with it batching and failure isolation (processing-batches.ts).
import type { Transaction } from 'kysely';
import { isPostgres } from '../../db/column-types.ts';
import type { Database } from '../../db/database.ts';
import { COLLECTING_PROVIDERS, type CollectingProvider, type Config } from '../../config.ts';
import type { Clock } from '../../shared/clock.ts';
import { repointCasePayments } from '../dunning/dunning.cases.ts';
import { rememberPaymentMethod } from '../payment-methods/payment-methods.ts';
import { recordPaymentReport, recordRefundReports } from '../payments/payments.recording.ts';
import {
  lockPaymentByReference,
  lockPaymentLink,
  lockPaymentReference,
  lockReferences,
  recordPaymentLink,
} from '../payments/payments.references.ts';
import { lockSubscription } from '../subscriptions/subscriptions.lifecycle.ts';
import { applyFailedPayment, applySuccessfulPayment } from '../subscriptions/subscriptions.payments.ts';
import { attributePayment } from './attribution.ts';
import {
  finishInboxRow,
  lockHeldRows,
  lockInboxRow,
  repointHeldRows,
  updateInboxRow,
} from './inbox.ts';
import { needsProcessing } from './inbox-status.ts';
import { type ProviderEvent, UnusableEventError } from './provider.ts';
import type { ProviderEventRow } from './provider-events.table.ts';
import { withoutNul } from './provider-values.ts';
import { readProviderEvent } from './providers/index.ts';
import { retryDelayMs } from './retry-backoff.ts';
import { withClockForCustomer } from '../test-clocks/test-clock-time.ts';

/** What processing needs besides the database: the clock, and config for dunning (Deps fits). */
export interface ProcessingContext {
  clock: Clock;
  config: Readonly<Config>;
}

/** What processing did with a row. `skipped`: another processor had already finished it. */
export type ProcessingOutcome = 'processed' | 'ignored' | 'held' | 'failed' | 'skipped';

export type PaymentEvent = Extract<ProviderEvent, { kind: 'payment_succeeded' | 'payment_failed' }>;
type RefundEvent = Extract<ProviderEvent, { kind: 'refunds' }>;
type LinkEvent = Extract<ProviderEvent, { kind: 'payment_linked' }>;

/**
 * Processes the locked inbox `row` inside `trx`: applies its event and moves the row to
 * `processed`, `ignored` or `held` (inbox-status.ts). `body` is the row's payload already
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
      await recordPaymentEvent(trx, ctx, row.provider, event);
      break;
    case 'payment_linked':
      await linkPaymentReferences(trx, ctx, row.provider, event);
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
 * backoff (retry-backoff.ts) at `next_attempt_at`.
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
 * A payment report: attribute it, record it (one payment per provider reference), and
 * move the subscription — success activates/renews, failure marks past_due (dunning hooks
 * in there) — exactly when the payment changed in a way that matters to it; a payment that
 * became paid releases the refunds held for it. The one path every payment report takes:
 * provider events, and the answers to the service's own charges (collection/charges.ts), so
 * a charge and its webhook converge to one payment whichever is recorded first. Throws
 * UnusableEventError when the report cannot be recorded (another currency than the payment's).
 */
export async function recordPaymentEvent(
  trx: Transaction<Database>,
  realCtx: ProcessingContext,
  provider: string,
  event: PaymentEvent,
): Promise<void> {
  const report = event.payment;
  const locked = await lockPaymentReference(trx, provider, report.reference);
  const existing = locked.payment;
  const needsAttribution = !existing || existing.customer_id === null || existing.subscription_id === null;
  const who = needsAttribution
    ? await attributePayment(trx, realCtx.clock, provider, report, existing?.currency ?? null)
    : { customerId: null, subscriptionId: null, planCurrency: null };
  // A test clock's customer's payment is recorded and applied at the clock's time (SPEC §11).
  const ctx = await withClockForCustomer(trx, realCtx, existing?.customer_id ?? who.customerId);
  const { clock } = ctx;
  // The report's own currency first: recording refuses one that differs from the payment's.
  const currency = report.currency ?? existing?.currency ?? who.planCurrency;
  if (currency === null) {
    throw new UnusableEventError('currency is missing and no subscription plan names one');
  }
  // Lock the subscription(s) this payment may move before its event takes the shared event
  // counter: the subscription routes lock the row first too, so the two cannot deadlock.
  await lockSubscriptions(trx, [existing?.subscription_id, who.subscriptionId]);
  const status = event.kind === 'payment_succeeded' ? 'succeeded' : 'failed';
  const change = await recordPaymentReport(
    trx,
    clock,
    locked,
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
  if (change.refused) throw new UnusableEventError(change.reason);
  const { payment } = change;
  if (status === 'succeeded') await saveReusableMethod(trx, ctx, provider, report, payment.customer_id);
  if (payment.subscription_id !== null) {
    const facts = {
      paymentId: payment.id,
      amount: payment.amount,
      currency: payment.currency,
      occurredAt: report.occurredAt,
      // The invoice the integration's checkout named (SPEC §9: it wins when valid).
      invoiceId: report.metadata.invoice_id ?? null,
      // A charge of ours names its attempt (SPEC §10): paying the invoice finishes it.
      identity: { provider, reference: payment.provider_reference, attemptId: report.metadata.payment_attempt_id },
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
 * SPEC §10: the reusable method a succeeded payment used is saved for the payment's customer
 * (in the payment's transaction; a card already saved stays as it is: rememberPaymentMethod).
 * Nothing is saved for a payment no customer is
 * attributed to, or without DATA_ENCRYPTION_KEY (set whenever a provider has an API key; without
 * one nothing could charge the method, and its credential could not be stored encrypted).
 */
async function saveReusableMethod(
  trx: Transaction<Database>,
  ctx: ProcessingContext,
  provider: string,
  report: PaymentEvent['payment'],
  customerId: string | null,
): Promise<void> {
  const method = report.method;
  if (!method || customerId === null || ctx.config.dataEncryptionKey === undefined) return;
  if (!(COLLECTING_PROVIDERS as readonly string[]).includes(provider)) return;
  await rememberPaymentMethod(trx, ctx, { ...method, customerId, provider: provider as CollectingProvider });
}

/**
 * PostgreSQL (SPEC §5 one payment per provider payment): for a batch of stored rows about to
 * be processed in `trx` (processing-batches.ts), takes the advisory locks of EVERY reference
 * the batch will read or write — payment reports', refunds' payment references, both
 * references of a link, and the canonical references they are known aliases of — in one
 * statement and one order (lockReferences), so that no row of the batch takes a reference
 * lock after another batch could hold it while waiting for one of ours (a deadlock there
 * fails rows: the link that would merge two payments of one charge among them). A row whose
 * event cannot be read is left to processInboxRow to refuse. Does nothing on SQLite.
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

/**
 * Refund reports (succeeded or failed). Returns the payment reference to wait for when its
 * payment is not recorded (or not paid) yet: the row is held and applied when the payment
 * succeeds, so any arrival order ends in the same state. Throws UnusableEventError when a
 * refund's currency differs from the payment's, or recording refuses the reports (a refund
 * beyond what remains of the payment): nothing is written and the inbox row keeps the reason.
 */
async function recordRefunds(
  trx: Transaction<Database>,
  ctx: ProcessingContext,
  provider: string,
  event: RefundEvent,
): Promise<string | null> {
  const payment = await lockPaymentByReference(trx, provider, event.paymentReference);
  if (!payment || payment.status === 'failed') return event.paymentReference;
  const { clock } = await withClockForCustomer(trx, ctx, payment.customer_id);
  for (const { currency } of event.refunds) {
    if (currency !== payment.currency) {
      throw new UnusableEventError(`refund currency ${currency} differs from the payment's ${payment.currency}`);
    }
  }
  const outcome = await recordRefundReports(trx, clock, payment, event.refunds);
  if (outcome.refused) throw new UnusableEventError(outcome.reason);
  return null;
}

/**
 * Two references of one payment (Stripe `invoice_payment.paid`): from now on both land on
 * one payment, and payments already recorded under each become one (payments.references.ts).
 * The subscription moves only if the merged payment owes it an effect no report applied
 * (SPEC §5: one period, one dunning attempt per provider payment). Refused (UnusableEventError,
 * nothing written) when the two cannot be one payment.
 */
async function linkPaymentReferences(
  trx: Transaction<Database>,
  ctx: ProcessingContext,
  provider: string,
  event: LinkEvent,
): Promise<void> {
  const link = await lockPaymentLink(trx, provider, event.reference, event.canonicalReference);
  if (link.conflict !== null) throw new UnusableEventError(link.conflict);
  await lockSubscriptions(trx, [link.aliasPayment?.subscription_id, link.canonicalPayment?.subscription_id]);
  const { payment, mergedPaymentId, owedEffect } = await recordPaymentLink(trx, ctx.clock, link);
  await repointHeldRows(trx, provider, event.reference, event.canonicalReference);
  if (!payment) return;
  if (mergedPaymentId !== null) await repointCasePayments(trx, ctx.clock, mergedPaymentId, payment.id);
  if (payment.subscription_id !== null && owedEffect !== null) {
    const facts = {
      paymentId: payment.id,
      amount: payment.amount,
      currency: payment.currency,
      identity: { provider, reference: payment.provider_reference },
    };
    // The success owed is the paid report's, at its provider time (`paid_at`), so a stale
    // failure arriving later is still recognised as older. A failed row keeps no provider
    // time: its owed failure counts as the newest report.
    const paidAt = payment.paid_at ?? undefined;
    if (owedEffect === 'succeeded')
      await applySuccessfulPayment(trx, ctx, payment.subscription_id, { ...facts, occurredAt: paidAt });
    else await applyFailedPayment(trx, ctx, payment.subscription_id, facts);
  }
  if (payment.status !== 'failed') await releaseHeldRefunds(trx, ctx, provider, payment.provider_reference);
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

/** Locks the distinct subscriptions among `ids` in id order (one lock order for everyone). */
async function lockSubscriptions(
  trx: Transaction<Database>,
  ids: readonly (string | null | undefined)[],
): Promise<void> {
  const distinct = new Set(ids.filter((id): id is string => typeof id === 'string'));
  for (const id of [...distinct].sort()) await lockSubscription(trx, id);
}

const MAX_ERROR_LENGTH = 1000;

/** The error as the inbox row keeps it (`Name: message`). */
function errorText(error: unknown): string {
  const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  // A reason may quote the provider's text; the inbox must be able to store it.
  return withoutNul(text).slice(0, MAX_ERROR_LENGTH);
}
