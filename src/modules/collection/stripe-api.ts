// Stripe's API through the official `stripe` package, the calls collection makes: a Checkout
// Session in `payment` mode (a checkout link). STRIPE_API_URL's scheme, host and port become
// the package's protocol/host/port settings, so tests point it at a local fake. No automatic
// retries here (maxNetworkRetries 0): a call carries our reference as its Idempotency-Key, so
// whoever retries repeats it safely; one deadline per call (PROVIDER_TIMEOUT) — the package's
// own timeout is per socket inactivity, so the whole call is also raced against it.
import Stripe from 'stripe';
import { ProviderCallError, scrubProviderText } from './provider-api.ts';

export interface StripeApiOptions {
  /** STRIPE_API_URL: an origin such as https://api.stripe.com. */
  apiUrl: string;
  /** STRIPE_API_KEY (non-empty). */
  apiKey: string;
  /** PROVIDER_TIMEOUT in ms. */
  timeoutMs: number;
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

export interface CreatedCheckoutSession {
  id: string;
  url: string;
  /** Unix seconds. */
  expires_at: number | null;
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

  // ---- Refunds (SPEC §10 "Refunds from the API"; stripe/openapi `refund`) ----

  /**
   * POST /v1/refunds `{payment_intent, amount, reason?, metadata}` with `Idempotency-Key` =
   * `input.idempotencyKey` (our refund id): repeating the call after no usable answer returns
   * the same refund instead of refunding twice. Returns the Refund's id (`re_…`) and status.
   * Throws ProviderCallError (`refused` with Stripe's message, `unauthorized`, `timeout`,
   * `unavailable`).
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

  /** `call`, or a `timeout` ProviderCallError when the deadline passes first; Stripe errors mapped. */
  async #withDeadline<T>(call: Promise<T>, action = 'create the Checkout Session'): Promise<T> {
    const { timeoutMs } = this.#options;
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new ProviderCallError('stripe', 'timeout', `Stripe did not answer within ${timeoutMs} ms`)),
        timeoutMs,
      );
    });
    call.catch(() => {}); // a late failure after the deadline is nobody's to handle
    try {
      return await Promise.race([call, deadline]);
    } catch (error) {
      throw this.#mapError(error, action);
    } finally {
      clearTimeout(timer);
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
