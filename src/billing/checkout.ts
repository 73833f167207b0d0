// Checkout links (SPEC §10): POST /api/invoices/{id}/checkout asks Paystack or Stripe for a
// payment page for what an open invoice still owes. The attempt is committed before the
// provider is called (so a crash or a timeout leaves a trace with its reference), then given
// the outcome. The link itself settles nothing: the provider's event for the payment does,
// through POST /api/notify, matched by the metadata (invoice_id) the link carries.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Deps } from '../deps.ts';
import { transactionWithRetry } from '../db/transaction.ts';
import { ProviderUnavailableError, StateConflictError, ValidationError } from '../http/errors.ts';
import { hostedInvoiceUrl, lockInvoice } from '../modules/invoices/invoices.lifecycle.ts';
import type { CheckoutInput, CheckoutLink } from './checkout.schemas.ts';
import {
  findAttempt,
  findCheckoutInFlight,
  findLiveCheckoutLink,
  type PaymentAttemptRow,
  recordAttemptOutcome,
  startAttempt,
} from '../modules/payment-attempts/payment-attempts.ts';
import { ProviderCallError, PROVIDER_DISPLAY_NAMES } from '../providers/provider-api.ts';
import { clockFor } from '../modules/test-clocks/test-clocks.time.ts';
import { isHttpUrl } from '../shared/urls.ts';
import { missingApiKeyError, providerCallAppError } from './provider-call-errors.ts';

/**
 * A link the provider gave no expiry for (Paystack) is handed out again for this long after
 * it was made (ms): Paystack does not say how long an `authorization_url` lives, and an hour
 * covers a customer who clicks Pay again, goes back, or reloads (SPEC §9 "Pay button").
 */
export const UNDATED_LINK_REUSE_MS = 60 * 60_000;

/**
 * A link with an expiry (Stripe's `expires_at`) is handed out again until this long before it
 * expires (ms): the customer must still have time to pay on it.
 */
export const LINK_REUSE_MARGIN_MS = 15 * 60_000;

/**
 * A Pay button press holds its attempt's lease for PROVIDER_TIMEOUT plus this (ms): the call's
 * own deadline, and time to record its outcome. Another press of the same invoice waits that
 * long at most for the link instead of making a second one.
 */
export const PRESS_LEASE_MARGIN_MS = 5_000;

/** How often a press waiting for another press's link looks at its attempt (ms). */
const IN_FLIGHT_POLL_MS = 25;

/** Pay button presses, on the leases they take (payment-attempts.ts `locked_by`). */
const PRESS_OWNER = 'pay-button';

/** Options of createCheckoutLink beyond the request body. */
export interface CheckoutOptions {
  /**
   * Return a still-valid link of the same invoice, provider and amount instead of asking the
   * provider for a new one (the hosted page's Pay button): an attempt `requires_action` made
   * less than UNDATED_LINK_REUSE_MS ago (no `expires_at`), or expiring more than
   * LINK_REUSE_MARGIN_MS from now. While another press of the same invoice, provider and
   * amount is calling the provider (its `pending` attempt's lease runs), wait for its link
   * instead (SPEC §10 "Pay button": two presses at once make one link). Off for the API,
   * where each call is a new link.
   */
  reuseLiveLink?: boolean;
}

/** What the provider is told about the invoice, and what its events bring back (SPEC §10). */
interface CheckoutRequest {
  attempt: PaymentAttemptRow;
  email: string;
  number: string;
  callbackUrl: string;
  cancelUrl: string;
  metadata: Record<string, string>;
}

/**
 * Creates a checkout link for invoice `invoiceId` through `input.provider` (default
 * DEFAULT_PROVIDER) for its `amount_remaining` (minor units), recording a payment attempt.
 * `callback_url` (default: the hosted invoice page) is where the provider sends the customer
 * afterwards. Throws 400 `validation_error` (callback_url not http(s)), 404 `not_found`, 409
 * `validation_error` (the invoice is not `open`), 422 `invalid_state` (the provider has no API
 * key, refuses the key, or refuses the request), 503 `internal_error` (no usable answer in
 * PROVIDER_TIMEOUT: the attempt stays `unknown`). With `options.reuseLiveLink`, a live link of
 * the same amount is returned as it was (no attempt, no provider call), and a link another
 * press is making right now is waited for and returned (503 `internal_error` when that press
 * ends without one, or not within PROVIDER_TIMEOUT + PRESS_LEASE_MARGIN_MS).
 */
export async function createCheckoutLink(
  deps: Deps,
  invoiceId: string,
  input: CheckoutInput,
  options: CheckoutOptions = {},
): Promise<CheckoutLink> {
  const { db, clock, config } = deps;
  if (input.callback_url !== undefined && !isHttpUrl(input.callback_url)) {
    throw new ValidationError('callback_url must be an absolute http:// or https:// URL', 'callback_url');
  }
  const provider = input.provider ?? config.defaultProvider;

  // A test clock's invoice stamps its attempts with the clock's time (SPEC §11); a link's
  // expiry stays the provider's, in real time.
  let stamp = clock;
  const request = await transactionWithRetry(db, async (trx): Promise<CheckoutRequest | CheckoutLink | InFlight> => {
    const invoice = await lockInvoice(trx, invoiceId);
    stamp = await clockFor(trx, deps, invoice.test_clock_id);
    const remaining = Number(invoice.amount_due) - Number(invoice.amount_paid);
    if (invoice.status !== 'open' || remaining <= 0) {
      throw new StateConflictError(`invoice ${invoice.id} cannot be paid in its current state (${invoice.status})`);
    }
    if (!deps.providers[provider]) throw missingApiKeyError(provider, 'collect payments');
    if (options.reuseLiveLink) {
      const now = clock.now().getTime();
      const live = await findLiveCheckoutLink(trx, {
        invoiceId: invoice.id,
        provider,
        amount: remaining,
        currency: invoice.currency,
        madeAfter: new Date(now - UNDATED_LINK_REUSE_MS).toISOString(),
        expiringAfter: new Date(now + LINK_REUSE_MARGIN_MS).toISOString(),
      });
      if (live) return linkOf(live, live.url);
      const inFlight = await findCheckoutInFlight(trx, {
        invoiceId: invoice.id,
        provider,
        amount: remaining,
        currency: invoice.currency,
        leasedAfter: new Date(now).toISOString(),
      });
      if (inFlight) return { inFlight };
    }
    const customer = await trx
      .selectFrom('customers')
      .select('email')
      .where('id', '=', invoice.customer_id)
      .executeTakeFirstOrThrow();
    const attempt = await startAttempt(trx, stamp, {
      invoiceId: invoice.id,
      provider,
      kind: 'checkout',
      amount: remaining,
      currency: invoice.currency,
      // A press leases its attempt while it calls the provider: another press waits for it.
      ...(options.reuseLiveLink
        ? {
            lease: {
              owner: PRESS_OWNER,
              until: new Date(clock.now().getTime() + config.providerTimeoutMs + PRESS_LEASE_MARGIN_MS).toISOString(),
            },
          }
        : {}),
    });
    const hosted = hostedInvoiceUrl(config.publicUrl, invoice.hosted_token);
    return {
      attempt,
      email: customer.email,
      // Open (checked above): finalized, so numbered.
      number: invoice.number ?? invoice.id,
      callbackUrl: input.callback_url ?? hosted,
      cancelUrl: hosted,
      metadata: {
        customer_id: invoice.customer_id,
        ...(invoice.subscription_id === null ? {} : { subscription_id: invoice.subscription_id }),
        invoice_id: invoice.id,
      },
    };
  });

  if ('inFlight' in request) return waitForLink(deps, request.inFlight);
  if (!('attempt' in request)) return request;
  const { attempt } = request;
  try {
    const link = await callProvider(deps, request);
    const issued = await recordAttemptOutcome(db, stamp, attempt, {
      status: 'requires_action',
      providerObjectId: link.providerObjectId,
      url: link.url,
      expiresAt: link.expiresAt,
    });
    return linkOf(issued, link.url);
  } catch (error) {
    if (!(error instanceof ProviderCallError)) throw error;
    await recordAttemptOutcome(db, stamp, attempt, {
      status: error.outcomeUnknown ? 'unknown' : 'failed',
      failureCode: error.providerCode ?? `provider_${error.failure}`,
      failureMessage: error.message,
    });
    throw providerCallAppError(error, attempt.reference);
  }
}

/** Another press's attempt, calling the provider now: its link is waited for. */
interface InFlight {
  inFlight: PaymentAttemptRow;
}

/**
 * The link `attempt` (another press's, `pending`) comes to, looked at every IN_FLIGHT_POLL_MS
 * for at most PROVIDER_TIMEOUT + PRESS_LEASE_MARGIN_MS of real time (the press's own deadline).
 * Throws 503 `internal_error` when it ends without a link (the provider refused or did not
 * answer: that press reported why) or does not end in time.
 */
async function waitForLink(deps: Deps, attempt: PaymentAttemptRow): Promise<CheckoutLink> {
  const deadline = performance.now() + deps.config.providerTimeoutMs + PRESS_LEASE_MARGIN_MS;
  for (;;) {
    const now = await findAttempt(deps.db, attempt.id);
    if (now?.status === 'requires_action' && now.url !== null) return linkOf(now, now.url);
    if (now?.status !== 'pending' || performance.now() >= deadline) {
      throw new ProviderUnavailableError(
        `${PROVIDER_DISPLAY_NAMES[attempt.provider]} gave no link to the payment started at the same time; retry later`,
        {
          provider: attempt.provider,
          reference: attempt.reference,
          reason: 'unavailable',
          provider_status: null,
          provider_code: null,
        },
      );
    }
    await sleep(IN_FLIGHT_POLL_MS);
  }
}

/** The API's link for an attempt that issued `url`. */
function linkOf(attempt: PaymentAttemptRow, url: string): CheckoutLink {
  return {
    provider: attempt.provider,
    url,
    reference: attempt.reference,
    ...(attempt.expires_at === null ? {} : { expires_at: attempt.expires_at }),
  };
}

/** The provider's answer, in our terms. */
interface ProviderLink {
  url: string;
  providerObjectId: string | null;
  expiresAt: string | null;
}

async function callProvider(deps: Deps, request: CheckoutRequest): Promise<ProviderLink> {
  const { attempt } = request;
  if (attempt.provider === 'paystack') {
    const answer = await deps.providers.paystack!.initializeTransaction({
      email: request.email,
      amount: attempt.amount,
      currency: attempt.currency,
      reference: attempt.reference,
      callback_url: request.callbackUrl,
      metadata: request.metadata,
    });
    return { url: answer.authorization_url, providerObjectId: answer.access_code || null, expiresAt: null };
  }
  // We keep no Stripe customer ids yet: the email prefills Checkout, which then creates the
  // Stripe customer the saved card (setup_future_usage) is attached to.
  const session = await deps.providers.stripe!.createCheckoutSession({
    amount: attempt.amount,
    currency: attempt.currency,
    description: `Invoice ${request.number}`,
    customerEmail: request.email,
    successUrl: request.callbackUrl,
    cancelUrl: request.cancelUrl,
    reference: attempt.reference,
    metadata: request.metadata,
  });
  return {
    url: session.url,
    providerObjectId: session.id,
    expiresAt: session.expires_at === null ? null : new Date(session.expires_at * 1000).toISOString(),
  };
}
