// Automatic collection (SPEC §10): the worker charges the saved default method of a customer
// whose invoice is due for a charge (`next_payment_attempt_at` ≤ now, set when a renewal
// invoice is issued, or by requestInvoiceCharge). Exactly once, per invoice:
//   1. claim (one short transaction): the due open invoices, SKIP LOCKED; for each, the
//      unresolved charge attempt it already has (its lease run out: a worker died or timed
//      out) or a NEW `pending` attempt — either under this worker's LEASE, and the invoice's
//      next_payment_attempt_at moved to the lease's end, so a crash makes it due again then;
//   2. call the provider OUTSIDE any transaction, with the attempt's reference as Paystack's
//      `reference` / Stripe's Idempotency-Key; an unresolved attempt is first ASKED about,
//      by our own reference only (Paystack GET /transaction/verify/:reference; Stripe: the
//      customer's PaymentIntents listed for metadata.payment_attempt_id) — the request is
//      re-sent, same reference, only when the look-up proves the provider never saw it;
//   3. record the outcomes (one transaction per batch; the common success recorded for the
//      whole batch at once, charges.batch.ts, with the same result): the payment through the same path as the
//      provider's webhook (recordPaymentEvent, keyed by the provider's reference), the
//      attempt's status, `invoice.payment_attempted`. An attempt recorded already (the lease
//      passed to another worker that got the same answer, or the invoice was paid meanwhile
//      and settlement finished it: payment-attempts finishChargesOfPaidInvoice) is left as it is.
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { type Kysely, sql, type Transaction } from 'kysely';
import type { Config } from '../config.ts';
import { inList } from '../db/bulk.ts';
import type { Database } from '../db/database.ts';
import { claimRows } from '../db/locking.ts';
import { deferCounts, flushCounts } from '../db/counts.ts';
import { transactionWithRetry } from '../db/transaction.ts';
import { type RowFailureLog, runIsolatedBatch, whereNotWaitingRetry } from '../db/row-failures.ts';
import type { Deps } from '../deps.ts';
import { type FailedRetry, finishRetryStep } from './dunning-steps.ts';
import { deferEvents, emitEvent, flushEvents } from '../modules/events/events.service.ts';
import { fanOutAsWritten } from '../modules/webhooks/webhooks.fan-out.ts';
import {
  type Invoice,
  lockInvoice,
  setNextPaymentAttempts,
  toInvoice,
  updateInvoice,
} from '../modules/invoices/invoices.lifecycle.ts';
import type { InvoiceRow } from '../db/tables/invoices.table.ts';
import { idTime } from '../shared/ids.ts';
import { realClockOf } from '../shared/clock.ts';
import { type JobScope, REAL_TIME, whereInScope } from '../db/scope.ts';
import { lockReference, lockReferences } from '../modules/payments/payments.references.ts';
import { recordSucceededCharges, type SucceededCharge } from './charges.batch.ts';
import {
  type ChargeableMethod,
  findDefaultPaymentMethod,
  findDefaultPaymentMethods,
  findPaymentMethodToCharge,
} from '../modules/payment-methods/payment-methods.ts';
import { type PaymentEvent, type ProcessingContext, recordPaymentEvent } from './payment-reports.ts';
import { lockSubscription } from '../modules/subscriptions/subscriptions.lifecycle.ts';
import { toPaymentAttempt } from '../modules/payment-attempts/payment-attempts.schemas.ts';
import {
  type ChargeAttemptOutcome,
  findUnresolvedCharge,
  findUnresolvedCharges,
  insertAttempts,
  INVOICE_PAID_ELSEWHERE,
  leaseAttempt,
  lockAttempt,
  type PaymentAttemptRow,
  pendingAttemptRow,
  recordChargeOutcome,
  startAttempt,
} from '../modules/payment-attempts/payment-attempts.ts';
import { ProviderCallError } from '../providers/provider-api.ts';
import { resolveDelayMs } from './resolve-schedule.ts';
import type { PaymentIntentCharge } from '../providers/stripe/api.ts';

/** The charge job's name: the key of its invoices' failure records (db/row-failures.ts). */
export const CHARGE_JOB = 'charge_invoices';

/** Invoices one run claims, and so the most provider calls one worker has in flight at once. */
export const CHARGE_CONCURRENCY = 100;

export { RESOLVE_DELAY_MS } from './resolve-schedule.ts';

/**
 * The lease of a claimed charge (ms): twice PROVIDER_TIMEOUT — the call's deadline, and as
 * much again to record the answer. A worker still recording after that is harmless: the
 * next one asks the provider, gets the same answer, and whoever records first wins.
 */
export function chargeLeaseMs(config: Pick<Config, 'providerTimeoutMs'>): number {
  return 2 * config.providerTimeoutMs;
}

/**
 * What recording a charge's answer needs: Deps, and the entry point's way to apply reports
 * held for a payment that becomes paid (ProcessingContext.releaseHeld; the worker passes the
 * inbox's).
 */
export type ChargeDeps = Deps & Pick<ProcessingContext, 'releaseHeld'>;

/** This process's name on the leases it takes. */
export const OWNER = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;

/**
 * Open invoices of `scope` (real-time customers, or one test clock's: SPEC §11) due for a
 * charge at `now` (ISO 8601), the longest waiting first. THE claim query of automatic
 * collection: anything that narrows what a worker charges goes here. An invoice whose claim
 * failed waits for its retry (db/row-failures.ts).
 */
export function dueChargesQuery(trx: Kysely<Database>, now: string, scope: JobScope = REAL_TIME) {
  const due = whereInScope(
    trx
      .selectFrom('invoices')
      .selectAll()
      // Literals: SQLite uses the scope's partial index (invoices_charge_due, …_by_clock) only then.
      .where('status', '=', sql.lit('open'))
      .where('next_payment_attempt_at', 'is not', null)
      .where('next_payment_attempt_at', '<=', now)
      .orderBy('next_payment_attempt_at')
      .orderBy('id'),
    'invoices.test_clock_id',
    scope,
  );
  return whereNotWaitingRetry(due, CHARGE_JOB, 'invoices.id', now);
}

/**
 * Asks the worker to charge the locked open invoice `row` at `at` (ISO 8601; default now):
 * sets its `next_payment_attempt_at` (no event). For dunning retries. The charge happens only
 * if the customer then has a saved default method and the invoice is still open.
 */
export async function requestInvoiceCharge(
  trx: Transaction<Database>,
  ctx: Pick<Deps, 'clock' | 'config'>,
  row: InvoiceRow,
  at?: string,
): Promise<Invoice> {
  return updateInvoice(trx, ctx, row, { next_payment_attempt_at: at ?? ctx.clock.now().toISOString() });
}

/** A charge this worker holds the lease of, with what the provider call needs. */
export interface ClaimedCharge {
  attempt: PaymentAttemptRow;
  invoice: Pick<InvoiceRow, 'id' | 'customer_id' | 'subscription_id'>;
  /** Undefined when the method is gone (the attempt can only be asked about). */
  method: ChargeableMethod | undefined;
  email: string;
  /** The attempt was started before (pending with an expired lease, or unknown): ask first. */
  resolving: boolean;
}

/** What a batched claim read for all its invoices, and the writes it leaves for its end. */
interface ClaimBatch {
  /** The batch's own transaction (not a savepoint of the per-row fallback). */
  trx: Transaction<Database>;
  /** Each invoice's unresolved charge, by invoice id. */
  unresolved: Map<string, PaymentAttemptRow>;
  /** Each customer's default method, by customer id. */
  methods: Map<string, ChargeableMethod>;
  /** Each customer's email, by customer id. */
  emails: Map<string, string>;
  /** New attempts, inserted together at the end. */
  attempts: PaymentAttemptRow[];
  /** Invoices whose next attempt moves to the lease's end, together at the end. */
  leased: string[];
}

/**
 * Claims up to `limit` due invoices (step 1 of the header) for `owner`, in one transaction.
 * Invoices that cannot be charged (nothing remains, no saved method, the method's provider
 * has no API key, or automatic charges stopped: `charges_stopped_at`) lose their
 * `next_payment_attempt_at`, and a dunning step waiting for the charge sends its reminder.
 * The batch's unresolved attempts, default methods and customers' emails are read in one
 * statement each, its new attempts inserted in one and its invoices' next attempt moved in
 * one. An invoice whose claim throws is rolled back alone and retried after a backoff
 * (db/row-failures.ts: the rerun claims each invoice with statements of its own; reported on
 * `log`). Returns the claimed charges and how many invoices were looked at.
 */
export async function claimCharges(
  deps: Deps,
  owner: string,
  limit: number,
  scope: JobScope = REAL_TIME,
  log?: RowFailureLog,
): Promise<{ claimed: ClaimedCharge[]; seen: number }> {
  const { db, clock, config } = deps;
  const now = clock.now();
  const nowIso = now.toISOString();
  const until = new Date(now.getTime() + chargeLeaseMs(config)).toISOString();
  // The attempt's lease is in real time, the invoice's next attempt in the scope's (SPEC §11: a
  // test clock's time says nothing of how long a provider call takes); the same in real time.
  const realNow = realClockOf(clock).now();
  const lease = { owner, until: new Date(realNow.getTime() + chargeLeaseMs(config)).toISOString() };
  // One row's claim, each statement its own: the per-row fallback (a savepoint per row), and
  // the rare cases of the batched claim (a lease held elsewhere, nothing to charge, a resume).
  const claimOne = async (trx: Transaction<Database>, invoice: InvoiceRow): Promise<ClaimedCharge | undefined> => {
    const unresolved = await findUnresolvedCharge(trx, invoice.id);
    return claimWith(trx, invoice, unresolved, undefined, undefined);
  };
  // The batch's reads and writes (see ClaimBatch): set by `begin` for the batch's own
  // transaction only, so a savepoint (the fallback's rows) claims alone.
  let shared: ClaimBatch | undefined;
  const claimWith = async (
    trx: Transaction<Database>,
    invoice: InvoiceRow,
    unresolved: PaymentAttemptRow | undefined,
    preread: { method: ChargeableMethod | undefined; email: string | undefined } | undefined,
    writes: ClaimBatch | undefined,
  ): Promise<ClaimedCharge | undefined> => {
    if (unresolved?.locked_until && unresolved.locked_until > realNow.toISOString()) {
      // Another worker is calling the provider for it: due again when its lease ends (a test
      // clock's: one lease later in its time; its advance waits for the lease, SPEC §11).
      const next = scope.testClockId === null ? unresolved.locked_until : until;
      await updateInvoice(trx, deps, invoice, { next_payment_attempt_at: next });
      return undefined;
    }
    let attempt: PaymentAttemptRow;
    let method: ChargeableMethod | undefined;
    if (unresolved) {
      attempt = await leaseAttempt(trx, clock, unresolved, lease);
      method =
        unresolved.payment_method_id === null
          ? undefined
          : await findPaymentMethodToCharge(trx, deps, unresolved.payment_method_id);
    } else {
      const remaining = Number(invoice.amount_due) - Number(invoice.amount_paid);
      method = preread ? preread.method : await findDefaultPaymentMethod(trx, deps, invoice.customer_id);
      if (remaining <= 0 || !method || !deps.providers[method.provider] || invoice.charges_stopped_at !== null) {
        await updateInvoice(trx, deps, invoice, { next_payment_attempt_at: null });
        // A dunning step waiting for this charge sends its reminder now (nothing charged).
        await finishRetryStep(trx, deps, invoice, null);
        return undefined;
      }
      const start = {
        invoiceId: invoice.id,
        provider: method.provider,
        kind: 'charge' as const,
        amount: remaining,
        currency: invoice.currency,
        paymentMethodId: method.id,
        lease,
      };
      if (writes) {
        attempt = pendingAttemptRow(clock, start);
        writes.attempts.push(attempt);
      } else {
        attempt = await startAttempt(trx, clock, start);
      }
    }
    if (writes) writes.leased.push(invoice.id);
    else await updateInvoice(trx, deps, invoice, { next_payment_attempt_at: until });
    const email =
      preread?.email ??
      (await trx.selectFrom('customers').select('email').where('id', '=', invoice.customer_id).executeTakeFirst())
        ?.email;
    return {
      attempt,
      invoice: { id: invoice.id, customer_id: invoice.customer_id, subscription_id: invoice.subscription_id },
      method,
      email: method?.email ?? email ?? '',
      resolving: unresolved !== undefined,
    };
  };
  const batch = {
    job: CHARGE_JOB,
    claim: (trx: Transaction<Database>) => claimRows(dueChargesQuery(trx, nowIso, scope).limit(limit), trx).execute(),
    // The batch's reads, in three statements for all its invoices (unresolved attempts,
    // default methods, customers' emails) instead of three per invoice.
    begin: async (trx: Transaction<Database>, rows: readonly InvoiceRow[]) => {
      const customerIds = [...new Set(rows.map((row) => row.customer_id))];
      const [unresolved, methods, customers] = [
        await findUnresolvedCharges(
          trx,
          rows.map((row) => row.id),
        ),
        await findDefaultPaymentMethods(trx, deps, customerIds),
        customerIds.length === 0
          ? []
          : await trx
              .selectFrom('customers')
              .select(['id', 'email'])
              .where(inList(trx, 'id', customerIds))
              .execute(),
      ];
      shared = {
        trx,
        unresolved,
        methods,
        emails: new Map(customers.map((row) => [row.id, row.email])),
        attempts: [],
        leased: [],
      };
    },
    each: async (trx: Transaction<Database>, invoice: InvoiceRow): Promise<ClaimedCharge | undefined> => {
      if (shared?.trx !== trx) return claimOne(trx, invoice);
      return claimWith(
        trx,
        invoice,
        shared.unresolved.get(invoice.id),
        { method: shared.methods.get(invoice.customer_id), email: shared.emails.get(invoice.customer_id) },
        shared,
      );
    },
    // The new attempts in one insert, the leased invoices' next attempt in one update.
    end: async (trx: Transaction<Database>) => {
      if (shared?.trx !== trx) return;
      const { attempts, leased } = shared;
      shared = undefined;
      await insertAttempts(trx, attempts);
      if (leased.length > 0) {
        await setNextPaymentAttempts(trx, deps, leased, until);
      }
    },
  };
  const { rows, results } = await runIsolatedBatch(db, clock, batch, log);
  return { claimed: results.filter((charge) => charge !== undefined), seen: rows.length };
}

/** What the provider said about a charge, in our words. */
export type ChargeResult =
  /** Charged: `reference` is the provider's id of the payment (Paystack: ours; Stripe: `pi_…`). */
  | { kind: 'succeeded'; reference: string; providerObjectId: string | null; amount: number; currency: string }
  /** Declined: a failed payment under `reference` when the provider made one. */
  | { kind: 'declined'; reference: string | null; providerObjectId: string | null; code: string; message: string }
  /** The customer must act (3-D Secure, OTP, a paused charge): no payment yet. */
  | { kind: 'requires_action'; providerObjectId: string | null; url: string | null; code: string; message: string }
  /** The provider refused the request itself (bad method, our key): nothing was charged. */
  | { kind: 'refused'; code: string; message: string }
  /** No usable answer (timeout, 5xx, not decided yet): ask again later. */
  | { kind: 'unknown'; providerObjectId: string | null; code: string; message: string };

/** `Insufficient Funds` → `insufficient_funds`. */
function codeOf(text: string | null, fallback: string): string {
  const code = (text ?? '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '')
    .slice(0, 64);
  return code === '' ? fallback : code;
}

/**
 * The metadata every charge carries (the same on every retry: Stripe compares parameters).
 * `payment_attempt_id` lets the provider's event for the charge finish its attempt when the
 * worker that sent it died before recording the answer (SPEC §10 "Exactly once").
 */
function metadataOf(charge: ClaimedCharge): Record<string, string> {
  return {
    customer_id: charge.invoice.customer_id,
    ...(charge.invoice.subscription_id === null ? {} : { subscription_id: charge.invoice.subscription_id }),
    invoice_id: charge.invoice.id,
    payment_attempt_id: charge.attempt.id,
  };
}

/** A Paystack transaction's status (charge answer or verify) as a ChargeResult. */
function paystackResult(
  answer: { status: string; reference: string; id: string | null; amount: number; currency: string },
  said: string | null,
  url: string | null,
): ChargeResult {
  const message = said ?? answer.status;
  switch (answer.status) {
    case 'success':
      return {
        kind: 'succeeded',
        reference: answer.reference,
        providerObjectId: answer.id,
        amount: answer.amount,
        currency: answer.currency.toUpperCase(),
      };
    case 'failed':
    case 'reversed':
      return {
        kind: 'declined',
        reference: answer.reference,
        providerObjectId: answer.id,
        code: codeOf(said, 'card_declined'),
        message,
      };
    case 'paused':
    case 'send_otp':
    case 'send_pin':
    case 'send_phone':
    case 'send_birthday':
    case 'send_address':
    case 'open_url':
      return { kind: 'requires_action', providerObjectId: answer.id, url, code: 'authentication_required', message };
    default:
      return {
        kind: 'unknown',
        providerObjectId: answer.id,
        code: 'provider_pending',
        message: `Paystack has not decided the charge yet (${answer.status})`,
      };
  }
}

/**
 * A charge whose saved method no configured key decrypts (SPEC §10 "Saved payment methods"):
 * refused without a provider call, so its invoice gets a failed attempt, its event and its
 * dunning reminder, and the other charges of the batch go on.
 */
const UNREADABLE_METHOD: ChargeResult = {
  kind: 'refused',
  code: 'payment_method_unreadable',
  message:
    'the saved payment method cannot be decrypted with any of DATA_ENCRYPTION_KEYS (the key it was saved with is no longer configured); nothing was sent to the provider',
};

/** Step 2 of the header for Paystack: verify first when resolving; charge when never seen. */
async function chargePaystack(deps: Deps, charge: ClaimedCharge): Promise<ChargeResult> {
  const api = deps.providers.paystack;
  if (!api)
    return {
      kind: 'unknown',
      providerObjectId: null,
      code: 'provider_not_configured',
      message: 'PAYSTACK_SECRET_KEY is not set',
    };
  const { attempt } = charge;
  if (charge.resolving) {
    let known: Awaited<ReturnType<typeof api.verifyTransaction>>;
    try {
      known = await api.verifyTransaction(attempt.reference);
    } catch (error) {
      // Only a 404 proves Paystack never saw the reference; any other failure of the look-up
      // (refused, unauthorized, no answer) proves nothing: still unknown, nothing sent (SPEC §10).
      if (!(error instanceof ProviderCallError)) throw error;
      return { kind: 'unknown', providerObjectId: null, code: `provider_${error.failure}`, message: error.message };
    }
    if (known) {
      const id = typeof known.data.id === 'number' || typeof known.data.id === 'string' ? String(known.data.id) : null;
      return paystackResult({ ...known, id }, known.gateway_response, null);
    }
  }
  if (!charge.method) return { kind: 'refused', code: 'payment_method_missing', message: 'the saved method is gone' };
  if (charge.method.credential === null) return UNREADABLE_METHOD;
  try {
    const answer = await api.chargeAuthorization({
      email: charge.email,
      amount: attempt.amount,
      authorization_code: charge.method.credential,
      currency: attempt.currency,
      reference: attempt.reference,
      metadata: metadataOf(charge),
    });
    // A paused charge has no transaction id yet: its access code names its resume page.
    return paystackResult(
      { ...answer, id: answer.id ?? answer.access_code },
      answer.gateway_response ??
        (answer.status === 'paused'
          ? 'Paystack paused the charge: the customer must complete it at the authorization URL'
          : null),
      answer.authorization_url,
    );
  } catch (error) {
    // Sent again after a 404, the reference is now taken: Paystack has the charge after all
    // (it arrived late). Not a refusal: unknown, verified again later.
    if (charge.resolving && error instanceof ProviderCallError && isDuplicateReference(error)) {
      return { kind: 'unknown', providerObjectId: null, code: 'provider_duplicate_reference', message: error.message };
    }
    throw error;
  }
}

/** Paystack refused a reference it already has (`duplicate_reference`, "Duplicate Transaction Reference"). */
function isDuplicateReference(error: ProviderCallError): boolean {
  return error.providerCode === 'duplicate_reference' || /duplicate transaction reference/i.test(error.message);
}

/**
 * How far before the attempt's id was made (real time) a Stripe look-up lists the customer's
 * PaymentIntents: the POST came after the id, and the margin covers the two clocks' skew.
 */
export const STRIPE_LOOKUP_MARGIN_MS = 60 * 60_000;

/**
 * Step 2 for Stripe: an unresolved attempt is first looked up by `metadata.payment_attempt_id`
 * among the customer's PaymentIntents (every page; Stripe keeps Idempotency-Keys only 24
 * hours, so the key alone cannot stop a second charge); found → its status is the outcome;
 * a look-up that proves nothing → unknown, nothing sent; absence proven (or a first call) →
 * the create, with the attempt's reference as Idempotency-Key.
 */
async function chargeStripe(deps: Deps, charge: ClaimedCharge): Promise<ChargeResult> {
  const api = deps.providers.stripe;
  if (!api)
    return {
      kind: 'unknown',
      providerObjectId: null,
      code: 'provider_not_configured',
      message: 'STRIPE_API_KEY is not set',
    };
  const { attempt, method } = charge;
  let intent: PaymentIntentCharge | null = null;
  if (charge.resolving) {
    // Without the Stripe customer nothing can be listed, so nothing is proven (SPEC §10).
    if (!method?.providerCustomerId) {
      return {
        kind: 'unknown',
        providerObjectId: null,
        code: 'provider_lookup_impossible',
        message: 'the saved method has no Stripe customer to look the charge up by',
      };
    }
    const createdFrom = Math.floor((idTime(attempt.id).getTime() - STRIPE_LOOKUP_MARGIN_MS) / 1000);
    try {
      intent = await api.findPaymentIntent(method.providerCustomerId, attempt.id, createdFrom);
    } catch (error) {
      if (!(error instanceof ProviderCallError)) throw error;
      return { kind: 'unknown', providerObjectId: null, code: `provider_${error.failure}`, message: error.message };
    }
  }
  if (intent === null) {
    if (!method?.providerCustomerId) {
      return { kind: 'refused', code: 'payment_method_missing', message: 'the saved method has no Stripe customer' };
    }
    if (method.credential === null) return UNREADABLE_METHOD;
    intent = await api.createPaymentIntent({
      amount: attempt.amount,
      currency: attempt.currency,
      customer: method.providerCustomerId,
      paymentMethod: method.credential,
      reference: attempt.reference,
      metadata: metadataOf(charge),
    });
  }
  if (intent.status === 'succeeded' && intent.id !== null) {
    return {
      kind: 'succeeded',
      reference: intent.id,
      providerObjectId: intent.id,
      amount: intent.amount,
      currency: intent.currency,
    };
  }
  if (intent.declineCode !== null) {
    return {
      kind: 'declined',
      reference: intent.id,
      providerObjectId: intent.id,
      code: intent.declineCode,
      message: intent.message ?? intent.declineCode,
    };
  }
  if (intent.status === 'requires_action' || intent.status === 'requires_confirmation') {
    return {
      kind: 'requires_action',
      providerObjectId: intent.id,
      url: intent.actionUrl,
      code: 'authentication_required',
      message: 'The customer must authenticate the payment',
    };
  }
  return {
    kind: 'unknown',
    providerObjectId: intent.id,
    code: 'provider_pending',
    message: `Stripe has not decided the charge yet (${intent.status})`,
  };
}

/** Calls the provider for `charge` (step 2); a failed call becomes `unknown` or `refused`. */
export async function callProviderForCharge(deps: Deps, charge: ClaimedCharge): Promise<ChargeResult> {
  try {
    return charge.attempt.provider === 'paystack'
      ? await chargePaystack(deps, charge)
      : await chargeStripe(deps, charge);
  } catch (error) {
    if (!(error instanceof ProviderCallError)) throw error;
    const code = error.outcomeUnknown
      ? `provider_${error.failure}`
      : (error.providerCode ?? `provider_${error.failure}`);
    return error.outcomeUnknown
      ? { kind: 'unknown', providerObjectId: null, code, message: error.message }
      : { kind: 'refused', code, message: error.message };
  }
}

/** The payment report a charge answer makes: the same shape a provider event gives. */
function paymentReportOf(
  charge: ClaimedCharge,
  result: Extract<ChargeResult, { kind: 'succeeded' | 'declined' }>,
  occurredAt: string,
): PaymentEvent {
  const { attempt } = charge;
  const succeeded = result.kind === 'succeeded';
  return {
    kind: succeeded ? 'payment_succeeded' : 'payment_failed',
    payment: {
      reference: result.reference!,
      amount: succeeded ? result.amount : Number(attempt.amount),
      currency: succeeded ? result.currency : attempt.currency,
      email: null,
      name: null,
      metadata: metadataOf(charge),
      subscriptionReference: null,
      failureReason: succeeded ? null : result.message,
      occurredAt,
    },
  };
}

/** The attempt's status for a result. */
function attemptOutcomeOf(result: ChargeResult): ChargeAttemptOutcome {
  switch (result.kind) {
    case 'succeeded':
      return { status: 'succeeded', providerObjectId: result.providerObjectId };
    case 'declined':
      return {
        status: 'failed',
        providerObjectId: result.providerObjectId,
        failureCode: result.code,
        failureMessage: result.message,
      };
    case 'requires_action':
      return {
        status: 'requires_action',
        providerObjectId: result.providerObjectId,
        url: result.url,
        failureCode: result.code,
        failureMessage: result.message,
      };
    case 'refused':
      return { status: 'failed', providerObjectId: null, failureCode: result.code, failureMessage: result.message };
    case 'unknown':
      return {
        status: 'unknown',
        providerObjectId: result.providerObjectId,
        failureCode: result.code,
        failureMessage: result.message,
      };
  }
}

/**
 * True when `result` needs the customer (SPEC §10 "Dunning retries"): a Stripe
 * `authentication_required` decline (an off-session charge the bank wants authenticated), or
 * any answer waiting for the customer (Paystack `paused` with an `authorization_url`, OTP,
 * PIN; a PaymentIntent in `requires_action`). Charging again without them fails the same way,
 * so the invoice's automatic charges stop for good.
 */
export function needsCustomer(result: ChargeResult): boolean {
  return result.kind === 'requires_action' || (result.kind === 'declined' && result.code === 'authentication_required');
}

/** What a failed charge tells a waiting dunning step. */
function failedRetryOf(
  attempt: PaymentAttemptRow,
  result: Extract<ChargeResult, { kind: 'declined' | 'refused' | 'requires_action' }>,
  stop: boolean,
): FailedRetry {
  return {
    charge: {
      attempt_id: attempt.id,
      status: result.kind === 'requires_action' ? 'requires_action' : 'failed',
      failure_code: result.code,
      failure_message: result.message,
    },
    providerUrl: result.kind === 'requires_action' ? result.url : null,
    needsCustomer: stop,
  };
}

/**
 * Records `result` for `charge` (step 3), in one transaction. Lock order: the payment
 * reference (as the webhook path takes it), the subscription, the invoice, the attempt.
 * Succeeded / declined-with-a-payment → recordPaymentEvent (one payment per provider
 * reference: the webhook for it, before or after, changes nothing more; a decline counts
 * `attempt_count`, emits `invoice.payment_failed` and moves the subscription as any failed
 * payment does, SPEC §9). Then the attempt, the invoice's next attempt (null; `unknown`:
 * resolveDelayMs of the attempt's age from now),
 * `charges_stopped_at` when the result needs the customer (needsCustomer), for a final
 * outcome `invoice.payment_attempted` `{invoice, attempt}`, and for a failure the reminder of
 * a dunning step waiting for this charge (finishRetryStep; lock order: the invoice, then its
 * case). Does nothing when the attempt is already resolved — except a success for an attempt
 * closed because another payment paid the invoice first (INVOICE_PAID_ELSEWHERE): the charge
 * happened, so its payment is recorded all the same.
 */
export async function recordChargeResult(deps: ChargeDeps, charge: ClaimedCharge, result: ChargeResult): Promise<void> {
  await transactionWithRetry(deps.db, (trx) => recordInTransaction(trx, deps, charge, result));
}

/**
 * Records several charges' results in ONE transaction (one commit for the batch: SQLite's
 * synchronous commit is most of a record's cost): every payment reference locked first (one
 * statement on PostgreSQL), then the common successes together (charges.batch.ts: the same
 * rows and events as one by one, a few statements for the batch), then every other result
 * one by one (recordInTransaction), in (subscription, invoice) order. When that transaction
 * fails, each is recorded in its own (recordChargeResult), so one bad record does not hold
 * back the others.
 */
export async function recordChargeResults(
  deps: ChargeDeps,
  results: readonly { charge: ClaimedCharge; result: ChargeResult }[],
): Promise<void> {
  if (results.length === 0) return;
  const key = ({ charge }: { charge: ClaimedCharge }) => `${charge.invoice.subscription_id ?? ''} ${charge.invoice.id}`;
  const ordered = [...results].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
  try {
    await deps.db.transaction().execute(async (trx) => {
      // The batch's events and count changes are written once, before the commit.
      deferEvents(trx);
      deferCounts(trx);
      // Every reference first, in one order (the one-by-one path locks its own first too).
      await lockReferences(
        trx,
        ordered.flatMap(({ charge, result }) => {
          const reference = result.kind === 'succeeded' || result.kind === 'declined' ? result.reference : null;
          return reference === null ? [] : [{ provider: charge.attempt.provider, reference }];
        }),
      );
      const recorded = await recordSucceededCharges(trx, deps, commonCases(ordered), deps.clock.now().toISOString(), {
        subscriptionIds: ordered.flatMap(({ charge }) => charge.invoice.subscription_id ?? []),
        invoiceIds: ordered.map(({ charge }) => charge.invoice.id),
      });
      for (const { charge, result } of ordered) {
        if (!recorded.has(charge.attempt.id)) await recordInTransaction(trx, deps, charge, result);
      }
      // Written fanned out: the webhook worker need not claim and rewrite them.
      await flushEvents(trx, fanOutAsWritten(realClockOf(deps.clock)));
      await flushCounts(trx);
    });
  } catch {
    for (const { charge, result } of ordered) await recordChargeResult(deps, charge, result);
  }
}

/**
 * The succeeded charges of subscriptions' invoices among `results`, each the only charge of
 * its subscription in the batch: what recordSucceededCharges may record together (it checks
 * the rest under its locks).
 */
function commonCases(results: readonly { charge: ClaimedCharge; result: ChargeResult }[]): SucceededCharge[] {
  const perSubscription = new Map<string, number>();
  for (const { charge } of results) {
    const id = charge.invoice.subscription_id;
    if (id !== null) perSubscription.set(id, (perSubscription.get(id) ?? 0) + 1);
  }
  return results.flatMap(({ charge, result }) => {
    const subscriptionId = charge.invoice.subscription_id;
    if (result.kind !== 'succeeded' || subscriptionId === null || perSubscription.get(subscriptionId) !== 1) return [];
    return [{ attempt: charge.attempt, invoice: { ...charge.invoice, subscription_id: subscriptionId }, result }];
  });
}

async function recordInTransaction(
  trx: Transaction<Database>,
  deps: ChargeDeps,
  charge: ClaimedCharge,
  result: ChargeResult,
): Promise<void> {
  const { clock } = deps;
  const { attempt } = charge;
  const paymentReference = result.kind === 'succeeded' || result.kind === 'declined' ? result.reference : null;
  if (paymentReference !== null) await lockReference(trx, attempt.provider, paymentReference);
  if (charge.invoice.subscription_id !== null) await lockSubscription(trx, charge.invoice.subscription_id);
  await lockInvoice(trx, charge.invoice.id);
  const current = await lockAttempt(trx, attempt.id);
  if (!current) return;
  // Closed when another payment paid the invoice first (finishChargesOfPaidInvoice), but the
  // provider charged it all the same: that money is recorded, and the attempt succeeded.
  const chargedAnyway =
    current.status === 'failed' && current.failure_code === INVOICE_PAID_ELSEWHERE && result.kind === 'succeeded';
  if (current.status !== 'pending' && current.status !== 'unknown' && !chargedAnyway) return;
  const now = clock.now();
  if ((result.kind === 'succeeded' || result.kind === 'declined') && paymentReference !== null) {
    await recordPaymentEvent(trx, deps, attempt.provider, paymentReportOf(charge, result, now.toISOString()));
    // Paying the invoice finished the attempt already, with its event (finishChargesOfPaidInvoice).
    if ((await lockAttempt(trx, attempt.id))?.status !== current.status) return;
  }
  const after = await recordChargeOutcome(trx, clock, current, attemptOutcomeOf(result));
  let invoiceRow = await lockInvoice(trx, charge.invoice.id);
  const stop = needsCustomer(result);
  if (invoiceRow.status === 'open') {
    // Backs off with the attempt's age in this charge's clock (a test clock's too), bounded.
    const next =
      result.kind === 'unknown'
        ? new Date(now.getTime() + resolveDelayMs(now.getTime() - Date.parse(current.created_at))).toISOString()
        : null;
    const changes = { next_payment_attempt_at: next, ...(stop ? { charges_stopped_at: now.toISOString() } : {}) };
    await updateInvoice(trx, deps, invoiceRow, changes);
    invoiceRow = { ...invoiceRow, ...changes };
  }
  if (result.kind !== 'unknown') {
    await emitEvent(trx, clock, 'invoice.payment_attempted', {
      invoice: toInvoice(invoiceRow, deps.config.publicUrl),
      attempt: toPaymentAttempt(after),
    });
  }
  if (result.kind !== 'unknown' && result.kind !== 'succeeded' && invoiceRow.status === 'open') {
    // A dunning step waiting for this charge sends its reminder now (SPEC §10 "Dunning retries").
    await finishRetryStep(trx, deps, invoiceRow, failedRetryOf(after, result, stop));
  }
}

/**
 * Claims and charges up to CHARGE_CONCURRENCY invoices of `scope` for `owner`, in parallel.
 * Returns invoices looked at.
 */
export async function chargeDueInvoices(
  deps: ChargeDeps,
  owner = OWNER,
  limit = CHARGE_CONCURRENCY,
  scope: JobScope = REAL_TIME,
  log?: RowFailureLog,
): Promise<number> {
  const { claimed, seen } = await claimCharges(deps, owner, limit, scope, log);
  const calls = await Promise.allSettled(
    claimed.map(async (charge) => ({ charge, result: await callProviderForCharge(deps, charge) })),
  );
  await recordChargeResults(
    deps,
    calls.flatMap((call) => (call.status === 'fulfilled' ? [call.value] : [])),
  );
  const failure = calls.find((call): call is PromiseRejectedResult => call.status === 'rejected');
  // The others are recorded; this one's lease runs out and the next run asks the provider.
  if (failure) throw failure.reason;
  return seen;
}
