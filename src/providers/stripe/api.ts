// Stripe's API through the official `stripe` package, the calls collection makes: a Checkout
// Session in `payment` mode (a checkout link), refunds, off-session PaymentIntents, and the
// look-ups that find a refund or PaymentIntent of ours by our own id in its metadata.
// STRIPE_API_URL's scheme, host and port become the package's protocol/host/port settings, so
// tests point it at a local fake. No automatic retries here (maxNetworkRetries 0): whoever
// resumes a call looks it up first (Stripe keeps Idempotency-Keys only 24 hours); one deadline
// per call (PROVIDER_TIMEOUT) — the package's own timeout is per socket inactivity, so the
// whole call is also raced against it.
import Stripe from 'stripe';
import { type CallDeadlines, ProviderCallError, realTimeDeadlines, scrubProviderText } from '../provider-api.ts';

export interface StripeApiOptions {
  /** STRIPE_API_URL: an origin such as https://api.stripe.com. */
  apiUrl: string;
  /** STRIPE_API_KEY (non-empty). */
  apiKey: string;
  /** PROVIDER_TIMEOUT in ms. */
  timeoutMs: number;
  /** Where each call's deadline comes from (default: real time). */
  deadlines?: CallDeadlines;
}

/** A Checkout Session for one payment (SPEC §10). Amounts in minor units. */
export interface CheckoutSessionInput {
  amount: number;
  /** ISO 4217 (sent lower case, as Stripe expects). */
  currency: string;
  /** The line's product name, e.g. "Invoice INV-000042". */
  description: string;
  /** A Stripe customer id (`cus_…` at Stripe) when one is known. */
  customer?: string;
  /** Prefills the email when no Stripe customer is known. */
  customerEmail?: string;
  successUrl: string;
  cancelUrl?: string;
  /** Ours: `client_reference_id` and the Idempotency-Key. */
  reference: string;
  /** On the session and on its PaymentIntent. */
  metadata: Record<string, string>;
}

/** A refund of a PaymentIntent (SPEC §10). `amount` in minor units. */
export interface StripeRefundInput {
  paymentIntent: string;
  amount: number;
  /** Stripe's enum, only when the client's reason is one of its values. */
  reason?: 'duplicate' | 'fraudulent' | 'requested_by_customer';
  /** `refund_id` (ours) comes back on the Refund's events; `payment_id`; `reason` when not in the enum. */
  metadata: Record<string, string>;
  /** Our refund id. */
  idempotencyKey: string;
}

/** A Checkout Session in `setup` mode: a method saved without a payment (SPEC §10). */
export interface SetupSessionInput {
  /** ISO 4217 (sent lower case). */
  currency: string;
  /** The Stripe customer (`cus_…`) a saved method of ours is attached to, when one is known. */
  customer?: string;
  /** Prefills Checkout and the Stripe customer it creates when none is known. */
  customerEmail: string;
  successUrl: string;
  cancelUrl: string;
  /** Ours: `client_reference_id` and the Idempotency-Key. */
  reference: string;
  /** On the session and on its SetupIntent. */
  metadata: Record<string, string>;
}

export interface CreatedCheckoutSession {
  id: string;
  url: string;
  /** Unix seconds. */
  expires_at: number | null;
}

/** An off-session PaymentIntent charging a saved method (SPEC §10). Amounts in minor units. */
export interface PaymentIntentInput {
  amount: number;
  /** ISO 4217 (sent lower case). */
  currency: string;
  /** The Stripe customer (`cus_…`) the PaymentMethod is attached to. */
  customer: string;
  /** The saved PaymentMethod (`pm_…`). */
  paymentMethod: string;
  /** Ours (`pat-…`): the Idempotency-Key, the same on every retry of one attempt. */
  reference: string;
  metadata: Record<string, string>;
}

/**
 * What Stripe made of an off-session charge: the PaymentIntent's id and status (`succeeded`,
 * `processing`, `requires_action`, `requires_payment_method`, …). A decline (a `card_error`)
 * is an answer too: `declineCode` (`insufficient_funds`, `authentication_required`, …) and
 * `message`, with the PaymentIntent Stripe attached to the error.
 */
export interface PaymentIntentCharge {
  /** `pi_…`; null when a decline carried no PaymentIntent. */
  id: string | null;
  status: string;
  /** Minor units. */
  amount: number;
  /** ISO 4217 upper case. */
  currency: string;
  declineCode: string | null;
  message: string | null;
  /** Where the customer authenticates (`next_action.redirect_to_url.url`), when Stripe gives one. */
  actionUrl: string | null;
}

/**
 * Pages one look-up reads at most (100 objects each): more than 10,000 refunds of one
 * PaymentIntent, or PaymentIntents of one customer in the window, proves nothing.
 */
export const MAX_LOOKUP_PAGES = 100;

/** One page of a Stripe list (`{object: 'list', data, has_more, url}`), as far as a look-up reads it. */
interface ListPage<T> {
  data: T[];
  has_more: boolean;
}

/** A client of Stripe's API. One per process. */
export class StripeApi {
  readonly #stripe: Stripe;
  readonly #options: StripeApiOptions;

  constructor(options: StripeApiOptions) {
    this.#options = options;
    const url = new URL(options.apiUrl);
    this.#stripe = new Stripe(options.apiKey, {
      host: url.hostname,
      port: url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port),
      protocol: url.protocol === 'https:' ? 'https' : 'http',
      timeout: options.timeoutMs,
      maxNetworkRetries: 0,
      telemetry: false,
    });
  }

  /**
   * POST /v1/checkout/sessions, mode `payment`, one line of `amount`, the card saved for
   * off-session use (`payment_intent_data.setup_future_usage=off_session`) and `metadata` on
   * the session and its PaymentIntent. Returns the session's id, url and expiry. Throws
   * ProviderCallError (`refused` with Stripe's message, `unauthorized`, `timeout`, `unavailable`).
   */
  async createCheckoutSession(input: CheckoutSessionInput): Promise<CreatedCheckoutSession> {
    const params: Stripe.Checkout.SessionCreateParams = {
      mode: 'payment',
      line_items: [
        {
          quantity: 1,
          price_data: {
            currency: input.currency.toLowerCase(),
            unit_amount: input.amount,
            product_data: { name: input.description },
          },
        },
      ],
      client_reference_id: input.reference,
      success_url: input.successUrl,
      ...(input.cancelUrl ? { cancel_url: input.cancelUrl } : {}),
      ...(input.customer
        ? { customer: input.customer }
        : input.customerEmail
          ? { customer_email: input.customerEmail }
          : {}),
      metadata: input.metadata,
      payment_intent_data: { setup_future_usage: 'off_session', metadata: input.metadata },
    };
    const session = await this.#withDeadline(
      this.#stripe.checkout.sessions.create(params, { idempotencyKey: input.reference }),
    );
    if (typeof session.url !== 'string' || !/^https?:\/\//.test(session.url)) {
      throw new ProviderCallError('stripe', 'unavailable', 'Stripe created a Checkout Session without a url');
    }
    return {
      id: session.id,
      url: session.url,
      expires_at: typeof session.expires_at === 'number' ? session.expires_at : null,
    };
  }

  /**
   * POST /v1/checkout/sessions, mode `setup` (https://docs.stripe.com/payments/save-and-reuse?platform=checkout):
   * the customer saves a method without paying. `currency` (ISO 4217, sent lower case) is
   * required by dynamic payment methods in setup mode. With a known Stripe customer (`cus_…`)
   * the method is attached to it; otherwise `customer_creation: always` makes one from the
   * prefilled email. `metadata` goes on the session and on its SetupIntent
   * (`setup_intent_data.metadata`), whose `setup_intent.succeeded` event saves the method
   * (SPEC §10 "Adding a method"). `reference` is the Idempotency-Key. Returns the session's
   * id, url and expiry (Unix seconds). Throws ProviderCallError as createCheckoutSession.
   */
  async createSetupSession(input: SetupSessionInput): Promise<CreatedCheckoutSession> {
    const params: Stripe.Checkout.SessionCreateParams = {
      mode: 'setup',
      currency: input.currency.toLowerCase(),
      client_reference_id: input.reference,
      success_url: input.successUrl,
      cancel_url: input.cancelUrl,
      ...(input.customer
        ? { customer: input.customer }
        : { customer_creation: 'always', customer_email: input.customerEmail }),
      metadata: input.metadata,
      setup_intent_data: { metadata: input.metadata },
    };
    const session = await this.#withDeadline(
      this.#stripe.checkout.sessions.create(params, { idempotencyKey: input.reference }),
    );
    if (typeof session.url !== 'string' || !/^https?:\/\//.test(session.url)) {
      throw new ProviderCallError('stripe', 'unavailable', 'Stripe created a Checkout Session without a url');
    }
    return {
      id: session.id,
      url: session.url,
      expires_at: typeof session.expires_at === 'number' ? session.expires_at : null,
    };
  }

  // ---- Refunds (SPEC §10 "Refunds from the API"; stripe/openapi `refund`) ----

  /**
   * POST /v1/refunds `{payment_intent, amount, reason?, metadata}` with `Idempotency-Key` =
   * `input.idempotencyKey` (our refund id). A resumed refund is looked up first (findRefund):
   * the key alone protects only for the 24 hours Stripe keeps it. Returns the Refund's id
   * (`re_…`) and status. Throws ProviderCallError (`refused` with Stripe's message,
   * `unauthorized`, `timeout`, `unavailable` — also an `idempotency_error`, which is no refusal).
   */
  async createRefund(input: StripeRefundInput): Promise<{ id: string; status: string }> {
    const params: Stripe.RefundCreateParams = {
      payment_intent: input.paymentIntent,
      amount: input.amount,
      ...(input.reason ? { reason: input.reason } : {}),
      metadata: input.metadata,
    };
    const refund = await this.#withDeadline(
      this.#stripe.refunds.create(params, { idempotencyKey: input.idempotencyKey }),
      'create the refund',
    );
    if (typeof refund.id !== 'string' || refund.id === '') {
      throw new ProviderCallError('stripe', 'unavailable', 'Stripe created a refund without an id');
    }
    return { id: refund.id, status: typeof refund.status === 'string' ? refund.status : '' };
  }

  /**
   * The refund of PaymentIntent `paymentIntent` whose `metadata.refund_id` is exactly
   * `refundId` (ours), from GET /v1/refunds?payment_intent=…&limit=100, every page read
   * (`starting_after` = the last id while `has_more`; Stripe's lists are strongly consistent,
   * its Search is not). Returns its id (`re_…`) and status, or null when every page was read
   * and none carries our id: absence proven. Throws ProviderCallError `timeout` or
   * `unavailable` (never `refused`: the outcome stays unknown) when the look-up proves nothing
   * — any page failing, refused or unauthorized included, a page Stripe's list shape does not
   * fit, or more than MAX_LOOKUP_PAGES pages.
   * SPEC §10 "Refunds from the API"; https://docs.stripe.com/api/refunds/list.
   */
  async findRefund(paymentIntent: string, refundId: string): Promise<{ id: string; status: string } | null> {
    const found = await this.#findInList<Stripe.Refund>(
      (startingAfter) =>
        this.#stripe.refunds.list({
          payment_intent: paymentIntent,
          limit: 100,
          ...(startingAfter ? { starting_after: startingAfter } : {}),
        }),
      (refund) => refund.metadata?.refund_id === refundId,
      'list the refunds',
    );
    if (!found) return null;
    return { id: found.id, status: typeof found.status === 'string' ? found.status : '' };
  }

  /**
   * The PaymentIntent of customer `customer` (`cus_…`) whose `metadata.payment_attempt_id` is
   * exactly `attemptId` (ours), from GET /v1/payment_intents?customer=…&created[gte]=`createdFrom`
   * (unix seconds)&limit=100, every page read as findRefund does. Returns it as a
   * PaymentIntentCharge (a decline: `declineCode` from its `last_payment_error`), or null when
   * absence is proven. Throws ProviderCallError when the look-up proves nothing (as
   * findRefund). SPEC §10 "Automatic collection"; https://docs.stripe.com/api/payment_intents/list.
   */
  async findPaymentIntent(
    customer: string,
    attemptId: string,
    createdFrom: number,
  ): Promise<PaymentIntentCharge | null> {
    const intent = await this.#findInList<Stripe.PaymentIntent>(
      (startingAfter) =>
        this.#stripe.paymentIntents.list({
          customer,
          created: { gte: createdFrom },
          limit: 100,
          ...(startingAfter ? { starting_after: startingAfter } : {}),
        }),
      (candidate) => candidate.metadata?.payment_attempt_id === attemptId,
      'list the PaymentIntents',
    );
    if (!intent) return null;
    if (typeof intent.status !== 'string' || typeof intent.amount !== 'number' || typeof intent.currency !== 'string') {
      throw new ProviderCallError('stripe', 'unavailable', 'Stripe listed a PaymentIntent without status or amount');
    }
    const redirect = intent.next_action?.redirect_to_url?.url;
    // Confirmed off-session and left needing a new method: the charge was declined.
    const declined = intent.status === 'requires_payment_method';
    const error = declined ? intent.last_payment_error : null;
    return {
      id: intent.id,
      status: intent.status,
      amount: intent.amount,
      currency: intent.currency.toUpperCase(),
      declineCode: declined ? scrubProviderText(error?.decline_code ?? error?.code ?? 'card_declined', []) : null,
      message: declined && error?.message ? scrubProviderText(error.message, [this.#options.apiKey]) : null,
      actionUrl: typeof redirect === 'string' ? redirect : null,
    };
  }

  /**
   * The first object of a list (newest first, every page until `has_more` is false) that
   * `matches`, or null once every page was read. Each page gets its own deadline. Throws
   * ProviderCallError whenever absence is not proven.
   */
  async #findInList<T extends { id: string }>(
    page: (startingAfter: string | undefined) => Promise<ListPage<T>>,
    matches: (item: T) => boolean,
    action: string,
  ): Promise<T | null> {
    let startingAfter: string | undefined;
    for (let read = 0; read < MAX_LOOKUP_PAGES; read += 1) {
      const list = await this.#withDeadline(page(startingAfter), action).catch((error: unknown) => {
        // A refused or unauthorized look-up says nothing about the refund or charge: unknown.
        if (!(error instanceof ProviderCallError) || error.outcomeUnknown) throw error;
        throw new ProviderCallError('stripe', 'unavailable', `${error.message}; nothing is proven`, {
          providerStatus: error.providerStatus,
          providerCode: error.providerCode,
        });
      });
      if (!Array.isArray(list?.data) || typeof list.has_more !== 'boolean') {
        throw new ProviderCallError(
          'stripe',
          'unavailable',
          `Stripe answered a page we cannot read when asked to ${action}`,
        );
      }
      const found = list.data.find((item) => matches(item));
      if (found) return found;
      if (!list.has_more) return null;
      const last = list.data.at(-1)?.id;
      // More pages, but no cursor to ask for them: nothing is proven.
      if (typeof last !== 'string' || last === '') {
        throw new ProviderCallError(
          'stripe',
          'unavailable',
          `Stripe answered a page without a cursor when asked to ${action}`,
        );
      }
      startingAfter = last;
    }
    throw new ProviderCallError(
      'stripe',
      'unavailable',
      `Stripe answered more than ${MAX_LOOKUP_PAGES} pages when asked to ${action}; nothing is proven`,
    );
  }

  /**
   * POST /v1/payment_intents with `confirm=true`, `off_session=true`, Idempotency-Key =
   * `input.reference`. An unresolved charge is looked up first (findPaymentIntent): Stripe
   * keeps keys only 24 hours. A decline comes back as an answer (PaymentIntentCharge with
   * `declineCode`). Throws ProviderCallError (`refused`, `unauthorized`, `timeout`,
   * `unavailable` — also an `idempotency_error`, which is no refusal).
   */
  async createPaymentIntent(input: PaymentIntentInput): Promise<PaymentIntentCharge> {
    const params: Stripe.PaymentIntentCreateParams = {
      amount: input.amount,
      currency: input.currency.toLowerCase(),
      customer: input.customer,
      payment_method: input.paymentMethod,
      off_session: true,
      confirm: true,
      metadata: input.metadata,
    };
    try {
      const intent = await this.#withDeadline(
        this.#stripe.paymentIntents.create(params, { idempotencyKey: input.reference }),
        'create the PaymentIntent',
        true,
      );
      const redirect = intent.next_action?.redirect_to_url?.url;
      return {
        id: intent.id,
        status: intent.status,
        amount: intent.amount,
        currency: intent.currency.toUpperCase(),
        declineCode: null,
        message: null,
        actionUrl: typeof redirect === 'string' ? redirect : null,
      };
    } catch (error) {
      if (!(error instanceof Stripe.errors.StripeCardError)) throw this.#mapError(error, 'create the PaymentIntent');
      const raw = error.raw as { payment_intent?: { id?: unknown; status?: unknown } } | undefined;
      const intent = raw?.payment_intent;
      return {
        id: typeof intent?.id === 'string' ? intent.id : null,
        status: typeof intent?.status === 'string' ? intent.status : 'requires_payment_method',
        amount: input.amount,
        currency: input.currency.toUpperCase(),
        declineCode: scrubProviderText(error.decline_code ?? error.code ?? 'card_declined', []),
        message: scrubProviderText(error.message, [this.#options.apiKey]),
        actionUrl: null,
      };
    }
  }

  /**
   * `call`, or a `timeout` ProviderCallError when the deadline passes first; Stripe errors
   * mapped, unless `raw` (the caller maps them itself).
   */
  async #withDeadline<T>(call: Promise<T>, action = 'create the Checkout Session', raw = false): Promise<T> {
    const { timeoutMs, deadlines = realTimeDeadlines } = this.#options;
    const { signal, end } = deadlines.start(timeoutMs);
    let onAbort = () => {};
    const deadline = new Promise<never>((_, reject) => {
      onAbort = () =>
        reject(new ProviderCallError('stripe', 'timeout', `Stripe did not answer within ${timeoutMs} ms`));
      signal.addEventListener('abort', onAbort, { once: true });
    });
    call.catch(() => {}); // a late failure after the deadline is nobody's to handle
    try {
      return await Promise.race([call, deadline]);
    } catch (error) {
      if (raw && !(error instanceof ProviderCallError)) throw error;
      throw this.#mapError(error, action);
    } finally {
      signal.removeEventListener('abort', onAbort);
      end();
    }
  }

  #mapError(error: unknown, action: string): ProviderCallError {
    if (error instanceof ProviderCallError) return error;
    const { timeoutMs, apiKey } = this.#options;
    if (!(error instanceof Stripe.errors.StripeError)) {
      return new ProviderCallError('stripe', 'unavailable', 'Stripe could not be reached');
    }
    const status = typeof error.statusCode === 'number' ? error.statusCode : null;
    const code = typeof error.code === 'string' ? scrubProviderText(error.code, []) : null;
    const options = { providerStatus: status, providerCode: code };
    if (error instanceof Stripe.errors.StripeConnectionError || status === null) {
      return /timeout/i.test(error.message)
        ? new ProviderCallError('stripe', 'timeout', `Stripe did not answer within ${timeoutMs} ms`)
        : new ProviderCallError('stripe', 'unavailable', 'Stripe could not be reached', options);
    }
    // A key Stripe still holds for other parameters: the first request may have moved money,
    // so this is no refusal; the outcome stays unknown (SPEC §10).
    if (error instanceof Stripe.errors.StripeIdempotencyError) {
      return new ProviderCallError(
        'stripe',
        'unavailable',
        `Stripe would not ${action}: its Idempotency-Key was used with other parameters (idempotency_error); the outcome is unknown`,
        options,
      );
    }
    if (status === 401 || status === 403) {
      return new ProviderCallError('stripe', 'unauthorized', `Stripe refused STRIPE_API_KEY (HTTP ${status})`, options);
    }
    if (status >= 400 && status < 500 && status !== 429) {
      const said = scrubProviderText(error.message, [apiKey]);
      return new ProviderCallError(
        'stripe',
        'refused',
        `Stripe refused to ${action}: ${said === '' ? `HTTP ${status}` : said}`,
        options,
      );
    }
    return new ProviderCallError('stripe', 'unavailable', `Stripe could not ${action} (HTTP ${status})`, options);
  }
}
