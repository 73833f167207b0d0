// A fake Stripe API for tests (shapes from stripe/openapi fixtures3.json's `checkout.session`
// and `refund`, and Stripe's error object `{error: {type, code, message, param}}`): POST
// /v1/checkout/sessions (mode `payment`, or `setup`: a SetupIntent completed by completeSetup,
// its events sent by sendSetupWebhooks; GET /v1/setup_intents/{id}, /v1/payment_methods/{id}),
// POST /v1/refunds (and the signed `refund.updated` event Stripe would
// send: sendRefundEvent), GET /v1/refunds?payment_intent=… and GET
// /v1/payment_intents?customer=…&created[gte]=… (Stripe's list object `{object: 'list', url,
// has_more, data}`, newest first, `limit` 1–100 (default 10), `starting_after` = the last id
// of the previous page), form-encoded bodies as Stripe's library sends them
// (`a[b][0][c]=v`), `Authorization: Bearer <key>` checked, Idempotency-Key honoured (same key
// and body → the same answer; another body → 400 idempotency_error) until
// expireIdempotencyKeys() (Stripe keeps keys 24 hours), every call recorded, errors and
// timeouts on demand (queue(), inject()), every charge and refund it made in `ledger`.
import type { TestContext } from 'node:test';
import { FakeProviderServer, type FakeAnswer, type RecordedCall } from './fake-provider.ts';
import { signStripe, stripeEvent } from './provider-events.ts';

/** The API key test apps configure as STRIPE_API_KEY. */
export const STRIPE_API_KEY = 'sk_test_51Fake0Stripe0Key0For0Tests0Only0000000000000000';

/** `a[b][0][c]=v&…` → `{a: {b: [{c: 'v'}]}}`, as Stripe reads its form bodies. */
export function decodeStripeForm(raw: string): Record<string, unknown> {
  const root: Record<string, unknown> = {};
  for (const [key, value] of new URLSearchParams(raw)) {
    const path = key.replace(/\]/g, '').split('[');
    let node: Record<string, unknown> | unknown[] = root;
    path.forEach((part, i) => {
      const last = i === path.length - 1;
      const container = node as Record<string, unknown>;
      if (last) {
        container[part] = value;
        return;
      }
      container[part] ??= /^\d+$/.test(path[i + 1]!) ? [] : {};
      node = container[part] as Record<string, unknown>;
    });
  }
  return root;
}

/** What a fake PaymentIntent does: succeed, or decline (funds, or the customer must authenticate). */
export type StripeChargeOutcome = 'succeeded' | 'insufficient_funds' | 'authentication_required';

function stripeError(status: number, type: string, message: string, extra: Record<string, string> = {}): FakeAnswer {
  return { status, body: { error: { type, message, ...extra } } };
}

export class FakeStripe extends FakeProviderServer {
  readonly sessions = new Map<string, Record<string, unknown>>();
  /** Refunds by id (`re_…`), as the Refund objects the fake answered with. */
  readonly refunds = new Map<string, Record<string, unknown>>();
  /** Paid PaymentIntents the fake can refund: id → {amount, currency (lower case)}. */
  readonly paymentIntents = new Map<string, { amount: number; currency: string }>();
  readonly #idempotent = new Map<string, { raw: string; answer: FakeAnswer }>();
  #sequence = 0;

  constructor(apiKey = STRIPE_API_KEY) {
    super({
      apiKey,
      decode: (raw) => decodeStripeForm(raw),
      handle: (call) => this.#route(call),
      // Stripe masks all but the last four characters of the key it was given.
      unauthorized: stripeError(
        401,
        'invalid_request_error',
        `Invalid API Key provided: sk_test_****${apiKey.slice(-4)}`,
      ),
      serverError: stripeError(500, 'api_error', 'An unknown error occurred'),
    });
  }

  /** A started fake, closed when `t` ends. */
  static async start(t: TestContext, apiKey?: string): Promise<FakeStripe> {
    return new FakeStripe(apiKey).start(t);
  }

  /** The recorded POST /v1/checkout/sessions calls. */
  get sessionCalls(): RecordedCall[] {
    return this.calls.filter((c) => c.method === 'POST' && c.path === '/v1/checkout/sessions');
  }

  /**
   * Forgets every Idempotency-Key, as Stripe does once a key is 24 hours old
   * (https://docs.stripe.com/api/idempotent_requests): the same key then makes a new object.
   */
  expireIdempotencyKeys(): void {
    this.#idempotent.clear();
  }

  /** The recorded GET /v1/refunds (list) calls. */
  get refundListCalls(): RecordedCall[] {
    return this.calls.filter((c) => c.method === 'GET' && c.path.split('?')[0] === '/v1/refunds');
  }

  /** The recorded GET /v1/payment_intents (list) calls. */
  get intentListCalls(): RecordedCall[] {
    return this.calls.filter((c) => c.method === 'GET' && c.path.split('?')[0] === '/v1/payment_intents');
  }

  #route(call: RecordedCall): FakeAnswer {
    if (call.method === 'GET') return this.#list(call);
    const key = call.headers['idempotency-key'];
    if (typeof key === 'string') {
      const seen = this.#idempotent.get(key);
      if (seen) {
        return seen.raw === call.raw
          ? seen.answer
          : stripeError(
              400,
              'idempotency_error',
              'Keys for idempotent requests can only be used with the same parameters they were first used with.',
            );
      }
    }
    const answer =
      call.method === 'POST' && call.path === '/v1/checkout/sessions'
        ? this.#createSession(call.body)
        : call.method === 'POST' && call.path === '/v1/refunds'
          ? this.#createRefund(call.body)
          : call.method === 'POST' && call.path === '/v1/payment_intents'
            ? this.#createPaymentIntent(call.body, typeof key === 'string' ? key : null)
            : stripeError(404, 'invalid_request_error', `Unrecognized request URL (${call.method}: ${call.path}).`);
    if (typeof key === 'string') this.#idempotent.set(key, { raw: call.raw, answer });
    return answer;
  }

  // ---- Lists (GET /v1/refunds, GET /v1/payment_intents): Stripe's cursor pagination ----

  #list(call: RecordedCall): FakeAnswer {
    const url = new URL(call.path, 'http://stripe.invalid');
    const retrieved = /^\/v1\/(setup_intents|payment_methods)\/([^/]+)$/.exec(url.pathname);
    if (retrieved) {
      const found = (retrieved[1] === 'setup_intents' ? this.setupIntents : this.paymentMethods).get(retrieved[2]!);
      return found
        ? { status: 200, body: found }
        : stripeError(404, 'invalid_request_error', `No such ${retrieved[1]}: '${retrieved[2]}'`, {
            code: 'resource_missing',
          });
    }
    const query = url.searchParams;
    let items: Record<string, unknown>[];
    if (url.pathname === '/v1/refunds') {
      const intent = query.get('payment_intent');
      items = [...this.refunds.values()].filter((r) => intent === null || r.payment_intent === intent);
    } else if (url.pathname === '/v1/payment_intents') {
      const customer = query.get('customer');
      const gte = query.get('created[gte]');
      if (gte !== null && !/^\d+$/.test(gte)) {
        return stripeError(400, 'invalid_request_error', 'Invalid integer: created[gte]', { param: 'created[gte]' });
      }
      items = [...this.intents.values()]
        .filter((pi) => customer === null || pi.customer === customer)
        .filter((pi) => gte === null || Number(pi.created) >= Number(gte))
        .map(({ idempotency_key: _key, ...visible }) => visible);
    } else {
      return stripeError(404, 'invalid_request_error', `Unrecognized request URL (GET: ${url.pathname}).`);
    }
    const limit = Number(query.get('limit') ?? '10');
    if (!Number.isInteger(limit) || limit < 1 || limit > 100) {
      return stripeError(400, 'invalid_request_error', 'Invalid limit: must be between 1 and 100', { param: 'limit' });
    }
    // Newest first: the maps keep creation order.
    items.reverse();
    let start = 0;
    const after = query.get('starting_after');
    if (after !== null) {
      const index = items.findIndex((item) => item.id === after);
      if (index < 0) {
        return stripeError(400, 'invalid_request_error', `No such object: '${after}'`, {
          param: 'starting_after',
          code: 'resource_missing',
        });
      }
      start = index + 1;
    }
    const data = items.slice(start, start + limit);
    return {
      status: 200,
      body: { object: 'list', url: url.pathname, has_more: start + limit < items.length, data },
    };
  }

  /** SetupIntents (`seti_…`) made by sessions in `setup` mode, as GET /v1/setup_intents/{id} answers. */
  readonly setupIntents = new Map<string, Record<string, unknown>>();
  /** PaymentMethods (`pm_…`) saved by completed setups, as GET /v1/payment_methods/{id} answers. */
  readonly paymentMethods = new Map<string, Record<string, unknown>>();

  /**
   * A Checkout Session in `setup` mode (stripe/openapi: `currency` is required with dynamic
   * payment methods; no line items): a SetupIntent `requires_payment_method` with
   * `setup_intent_data.metadata`, completed later by completeSetup.
   */
  #createSetupSession(body: Record<string, unknown>): FakeAnswer {
    if (body.line_items !== undefined) {
      return stripeError(400, 'invalid_request_error', 'You cannot pass `line_items` in `setup` mode.', {
        param: 'line_items',
      });
    }
    if (typeof body.currency !== 'string' || !/^[a-z]{3}$/.test(body.currency)) {
      return stripeError(400, 'invalid_request_error', 'Missing required param: currency.', { param: 'currency' });
    }
    if (typeof body.success_url !== 'string') {
      return stripeError(400, 'invalid_request_error', 'Missing required param: success_url.', {
        param: 'success_url',
      });
    }
    this.#sequence += 1;
    const seq = String(this.#sequence).padStart(6, '0');
    const id = `cs_test_c1${seq}URlnyQCN5fUUduORoQ7Pw41PJqDWkIVQCpJPqkfIhd6tVY8XB`;
    const setupIntentId = `seti_1Fake${seq}SetupIntent`;
    const created = Math.floor(Date.now() / 1000);
    const intentData = (body.setup_intent_data ?? {}) as { metadata?: Record<string, string> };
    this.setupIntents.set(setupIntentId, {
      id: setupIntentId,
      object: 'setup_intent',
      created,
      customer: body.customer ?? null,
      livemode: false,
      metadata: intentData.metadata ?? {},
      payment_method: null,
      payment_method_types: ['card'],
      status: 'requires_payment_method',
      usage: 'off_session',
    });
    const session = {
      id,
      object: 'checkout.session',
      amount_subtotal: null,
      amount_total: null,
      cancel_url: body.cancel_url ?? null,
      client_reference_id: body.client_reference_id ?? null,
      created,
      currency: body.currency,
      customer: body.customer ?? null,
      customer_creation: body.customer_creation ?? null,
      customer_email: body.customer_email ?? null,
      expires_at: created + 86_400,
      livemode: false,
      metadata: body.metadata ?? {},
      mode: 'setup',
      payment_intent: null,
      payment_status: 'no_payment_required',
      setup_intent: setupIntentId,
      status: 'open',
      success_url: body.success_url,
      ui_mode: 'hosted',
      url: `https://checkout.stripe.com/c/pay/${id}`,
    };
    this.sessions.set(id, session);
    return { status: 200, body: session };
  }

  /**
   * The customer finishes setup session `sessionId` with a card: its SetupIntent `succeeded`
   * with a new PaymentMethod attached to the session's customer (or a new `cus_…` when the
   * session had none: `customer_creation: always`), the session `complete`. Returns the
   * PaymentMethod id.
   */
  completeSetup(sessionId: string, card: { brand?: string; last4?: string } = {}): string {
    const session = this.sessions.get(sessionId);
    if (!session || session.mode !== 'setup') throw new Error(`fake Stripe has no setup session ${sessionId}`);
    const intent = this.setupIntents.get(session.setup_intent as string)!;
    this.#sequence += 1;
    const customer = (session.customer as string | null) ?? `cus_Fake${String(this.#sequence).padStart(6, '0')}`;
    const paymentMethod = `pm_1Fake${String(this.#sequence).padStart(6, '0')}Card`;
    this.paymentMethods.set(paymentMethod, {
      id: paymentMethod,
      object: 'payment_method',
      type: 'card',
      customer,
      card: { brand: card.brand ?? 'visa', last4: card.last4 ?? '4242', exp_month: 12, exp_year: 2034 },
    });
    Object.assign(intent, { status: 'succeeded', customer, payment_method: paymentMethod });
    Object.assign(session, { status: 'complete', customer });
    return paymentMethod;
  }

  /**
   * POSTs the signed events Stripe sends for a completed setup session, in this order:
   * `checkout.session.completed` (mode `setup`, naming its SetupIntent by id) and
   * `setup_intent.succeeded` (its payment_method and customer). Returns both statuses.
   */
  async sendSetupWebhooks(sessionId: string): Promise<number[]> {
    const session = this.sessions.get(sessionId);
    if (!session || session.status !== 'complete') throw new Error(`setup session ${sessionId} is not complete`);
    const intent = this.setupIntents.get(session.setup_intent as string)!;
    return [
      await this.#sendEvent(stripeEvent('checkout.session.completed', session)),
      await this.#sendEvent(stripeEvent('setup_intent.succeeded', intent)),
    ];
  }

  /** POSTs `event`, signed at webhookTarget's time, to its /api/notify; returns the status. */
  async #sendEvent(event: object): Promise<number> {
    if (!this.webhookTarget) throw new Error('fake Stripe has no webhookTarget');
    const body = JSON.stringify(event);
    const timestamp = Math.floor(this.webhookTarget.now().getTime() / 1000);
    const response = await fetch(`${this.webhookTarget.url}/api/notify?p=stripe`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'stripe-signature': signStripe(body, timestamp) },
      body,
    });
    await response.arrayBuffer();
    return response.status;
  }

  #createSession(body: Record<string, unknown>): FakeAnswer {
    if (body.mode === 'setup') return this.#createSetupSession(body);
    if (body.mode !== 'payment') {
      return stripeError(400, 'invalid_request_error', 'Invalid mode: must be one of payment, setup, or subscription', {
        param: 'mode',
      });
    }
    const items = body.line_items as { quantity?: string; price_data?: Record<string, unknown> }[] | undefined;
    const first = items?.[0];
    const price = first?.price_data;
    if (!first || !price || !/^\d+$/.test(String(price.unit_amount)) || typeof price.currency !== 'string') {
      return stripeError(
        400,
        'invalid_request_error',
        'You must specify either `price` or `price_data` for each line item.',
        {
          param: 'line_items[0]',
          code: 'parameter_missing',
        },
      );
    }
    this.#sequence += 1;
    const id = `cs_test_a1${String(this.#sequence).padStart(6, '0')}URlnyQCN5fUUduORoQ7Pw41PJqDWkIVQCpJPqkfIhd6tVY8XB`;
    const created = Math.floor(Date.now() / 1000);
    const amount = Number(price.unit_amount) * Number(first.quantity ?? 1);
    const session = {
      id,
      object: 'checkout.session',
      amount_subtotal: amount,
      amount_total: amount,
      cancel_url: body.cancel_url ?? null,
      client_reference_id: body.client_reference_id ?? null,
      created,
      currency: price.currency,
      customer: body.customer ?? null,
      customer_creation: body.customer ? null : 'if_required',
      customer_email: body.customer_email ?? null,
      expires_at: created + 86_400,
      livemode: false,
      metadata: body.metadata ?? {},
      mode: 'payment',
      payment_intent: null,
      payment_status: 'unpaid',
      status: 'open',
      success_url: body.success_url ?? null,
      ui_mode: 'hosted',
      url: `https://checkout.stripe.com/c/pay/${id}`,
    };
    this.sessions.set(id, { ...session, payment_intent_data: body.payment_intent_data });
    return { status: 200, body: session };
  }

  // ---- Refunds (POST /v1/refunds; the refund.updated event) ----

  /** The recorded POST /v1/refunds calls. */
  get refundCalls(): RecordedCall[] {
    return this.calls.filter((c) => c.method === 'POST' && c.path === '/v1/refunds');
  }

  /** Makes `id` a succeeded PaymentIntent of `amount` (minor units) the fake can refund. */
  paid(id: string, amount: number, currency = 'usd'): void {
    this.paymentIntents.set(id, { amount, currency: currency.toLowerCase() });
  }

  /**
   * Settles refund `id` (`succeeded`, `failed`, `canceled`) and POSTs the signed
   * `refund.updated` event Stripe sends (the Refund object, metadata included) to
   * `<baseUrl>/api/notify?p=stripe`, signed at `timestamp` (unix seconds: the app clock's).
   * Returns the HTTP status of our answer.
   */
  async sendRefundEvent(
    baseUrl: string,
    id: string,
    status: 'succeeded' | 'failed' | 'canceled',
    timestamp: number,
  ): Promise<number> {
    const refund = this.refunds.get(id);
    if (!refund) throw new Error(`fake Stripe has no refund ${id}`);
    refund.status = status;
    if (status === 'failed') refund.failure_reason = 'expired_or_canceled_card';
    this.#sequence += 1;
    const body = JSON.stringify({
      id: `evt_1Fake${String(this.#sequence).padStart(8, '0')}`,
      object: 'event',
      api_version: '2025-03-31.basil',
      created: timestamp,
      data: { object: refund, previous_attributes: { status: 'pending' } },
      livemode: false,
      pending_webhooks: 1,
      request: { id: null, idempotency_key: null },
      type: 'refund.updated',
    });
    const response = await fetch(`${baseUrl}/api/notify?p=stripe`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'stripe-signature': signStripe(body, timestamp) },
      body,
    });
    await response.arrayBuffer();
    return response.status;
  }

  /**
   * Adds `count` refunds of `amount` (minor units) each to PaymentIntent `paymentIntent` (made
   * with paid()), none of them ours (no metadata.refund_id): the other refunds a look-up pages
   * through. In the ledger as `preExisting`.
   */
  seedRefunds(paymentIntent: string, count: number, amount = 1): void {
    const intent = this.paymentIntents.get(paymentIntent);
    if (!intent) throw new Error(`fake Stripe has no paid PaymentIntent ${paymentIntent}`);
    for (let i = 0; i < count; i += 1) {
      this.#sequence += 1;
      const id = `re_3Fake${String(this.#sequence).padStart(8, '0')}`;
      this.refunds.set(id, {
        id,
        object: 'refund',
        amount,
        charge: `ch_3Fake${String(this.#sequence).padStart(8, '0')}`,
        created: Math.floor(Date.now() / 1000),
        currency: intent.currency,
        metadata: {},
        payment_intent: paymentIntent,
        reason: null,
        status: 'succeeded',
      });
      this.ledger.refunds.push({
        providerId: id,
        payment: paymentIntent,
        amount,
        currency: intent.currency.toUpperCase(),
        marker: null,
        at: new Date().toISOString(),
        preExisting: true,
      });
    }
  }

  #createRefund(body: Record<string, unknown>): FakeAnswer {
    const intentId = body.payment_intent;
    const intent = typeof intentId === 'string' ? this.paymentIntents.get(intentId) : undefined;
    if (!intent) {
      return stripeError(400, 'invalid_request_error', `No such payment_intent: '${String(intentId)}'`, {
        param: 'payment_intent',
        code: 'resource_missing',
      });
    }
    const taken = [...this.refunds.values()]
      .filter((r) => r.payment_intent === intentId && r.status !== 'failed' && r.status !== 'canceled')
      .reduce((sum, r) => sum + Number(r.amount), 0);
    const amount = body.amount === undefined ? intent.amount - taken : Number(body.amount);
    if (!Number.isInteger(amount) || amount <= 0 || amount > intent.amount - taken) {
      return stripeError(
        400,
        'invalid_request_error',
        `Refund amount (${amount}) is greater than unrefunded amount on charge (${intent.amount - taken})`,
        { param: 'amount', code: 'amount_too_large' },
      );
    }
    if (
      body.reason !== undefined &&
      !['duplicate', 'fraudulent', 'requested_by_customer'].includes(String(body.reason))
    ) {
      return stripeError(400, 'invalid_request_error', 'Invalid reason', { param: 'reason' });
    }
    this.#sequence += 1;
    const id = `re_3Fake${String(this.#sequence).padStart(8, '0')}`;
    const refund: Record<string, unknown> = {
      id,
      object: 'refund',
      amount,
      balance_transaction: null,
      charge: `ch_3Fake${String(this.#sequence).padStart(8, '0')}`,
      created: Math.floor(Date.now() / 1000),
      currency: intent.currency,
      destination_details: {
        card: { reference_status: 'pending', reference_type: 'acquirer_reference_number', type: 'refund' },
        type: 'card',
      },
      metadata: body.metadata ?? {},
      payment_intent: intentId,
      reason: body.reason ?? null,
      receipt_number: null,
      source_transfer_reversal: null,
      status: 'pending',
      transfer_reversal: null,
    };
    this.refunds.set(id, refund);
    const metadata = (body.metadata ?? {}) as Record<string, unknown>;
    this.ledger.refunds.push({
      providerId: id,
      payment: intentId as string,
      amount,
      currency: intent.currency.toUpperCase(),
      marker: typeof metadata.refund_id === 'string' ? metadata.refund_id : null,
      at: new Date().toISOString(),
      preExisting: false,
    });
    return { status: 200, body: refund };
  }

  // ---- Charging (automatic collection): POST /v1/payment_intents ----
  // Shapes from stripe/openapi (payment_intent fixture; a decline is a 402 `card_error` with
  // `code`, `decline_code` and the PaymentIntent in `payment_intent`). The Idempotency-Key
  // replay above returns the first answer for the same key and body, declines included, as
  // Stripe does; a charge is counted only when a request is not such a replay.

  /** What the next PaymentIntents do, in order; then `defaultChargeOutcome`. */
  readonly chargeOutcomes: StripeChargeOutcome[] = [];
  defaultChargeOutcome: StripeChargeOutcome = 'succeeded';
  /** PaymentIntents created, by id. */
  readonly intents = new Map<string, Record<string, unknown>>();
  /** Charges made per Idempotency-Key (our attempt reference). */
  readonly chargesByReference = new Map<string, number>();
  /** Where sendChargeWebhook posts (our app), and the clock its signature is made at. */
  webhookTarget: { url: string; now: () => Date } | undefined;

  /** The recorded POST /v1/payment_intents calls. */
  get chargeCalls(): RecordedCall[] {
    return this.calls.filter((c) => c.method === 'POST' && c.path === '/v1/payment_intents');
  }

  /** Charges made under Idempotency-Key `reference`. */
  chargeCount(reference: string): number {
    return this.chargesByReference.get(reference) ?? 0;
  }

  /** All charges made. */
  get totalCharges(): number {
    let total = 0;
    for (const count of this.chargesByReference.values()) total += count;
    return total;
  }

  /** The PaymentIntent created under Idempotency-Key `reference`. */
  intentFor(reference: string): Record<string, unknown> | undefined {
    return [...this.intents.values()].find((intent) => intent.idempotency_key === reference);
  }

  /** POSTs the signed `payment_intent.succeeded` (or `.payment_failed`) event of `intentId` to webhookTarget. */
  async sendChargeWebhook(intentId: string): Promise<number> {
    const intent = this.intents.get(intentId);
    if (!intent) throw new Error(`fake Stripe has no PaymentIntent ${intentId}`);
    if (!this.webhookTarget) throw new Error('fake Stripe has no webhookTarget');
    const { idempotency_key: _key, ...object } = intent;
    const type = intent.status === 'succeeded' ? 'payment_intent.succeeded' : 'payment_intent.payment_failed';
    const body = JSON.stringify(stripeEvent(type, object));
    const timestamp = Math.floor(this.webhookTarget.now().getTime() / 1000);
    const response = await fetch(`${this.webhookTarget.url}/api/notify?p=stripe`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'stripe-signature': signStripe(body, timestamp) },
      body,
    });
    await response.arrayBuffer();
    return response.status;
  }

  /**
   * Adds `count` succeeded PaymentIntents of customer `customer` made before the test (no
   * metadata of ours, not in the ledger): the other PaymentIntents a look-up pages through.
   */
  seedPaymentIntents(customer: string, count: number): void {
    for (let i = 0; i < count; i += 1) {
      this.#sequence += 1;
      const id = `pi_3Fake${String(this.#sequence).padStart(6, '0')}Seeded0000`;
      this.intents.set(id, {
        id,
        object: 'payment_intent',
        amount: 100,
        amount_received: 100,
        created: Math.floor(Date.now() / 1000),
        currency: 'usd',
        customer,
        last_payment_error: null,
        livemode: false,
        metadata: {},
        next_action: null,
        status: 'succeeded',
        idempotency_key: null,
      });
    }
  }

  #createPaymentIntent(body: Record<string, unknown>, key: string | null): FakeAnswer {
    if (!/^\d+$/.test(String(body.amount)) || Number(body.amount) <= 0) {
      return stripeError(400, 'invalid_request_error', 'Invalid positive integer', {
        param: 'amount',
        code: 'parameter_invalid_integer',
      });
    }
    if (typeof body.currency !== 'string' || body.currency !== body.currency.toLowerCase()) {
      return stripeError(400, 'invalid_request_error', 'Invalid currency', { param: 'currency' });
    }
    if (typeof body.customer !== 'string' || typeof body.payment_method !== 'string') {
      return stripeError(400, 'invalid_request_error', 'Missing customer or payment_method', {
        param: 'payment_method',
        code: 'parameter_missing',
      });
    }
    if (body.confirm !== 'true' || body.off_session !== 'true') {
      return stripeError(400, 'invalid_request_error', 'This fake charges off-session only', { param: 'off_session' });
    }
    const outcome = this.chargeOutcomes.shift() ?? this.defaultChargeOutcome;
    if (key !== null) this.chargesByReference.set(key, this.chargeCount(key) + 1);
    this.#sequence += 1;
    const id = `pi_3Fake${String(this.#sequence).padStart(6, '0')}Ab1cD2eF3gH4`;
    const amount = Number(body.amount);
    const declined = outcome !== 'succeeded';
    const error =
      outcome === 'insufficient_funds'
        ? { code: 'card_declined', decline_code: 'insufficient_funds', message: 'Your card has insufficient funds.' }
        : {
            code: 'authentication_required',
            decline_code: 'authentication_required',
            message: 'Your card was declined. This transaction requires authentication.',
          };
    const intent: Record<string, unknown> = {
      id,
      object: 'payment_intent',
      amount,
      amount_capturable: 0,
      amount_received: declined ? 0 : amount,
      capture_method: 'automatic',
      confirmation_method: 'automatic',
      created: Math.floor(Date.now() / 1000),
      currency: body.currency,
      customer: body.customer,
      description: null,
      last_payment_error: declined
        ? { ...error, type: 'card_error', payment_method: { id: body.payment_method } }
        : null,
      latest_charge: `ch_3Fake${String(this.#sequence).padStart(6, '0')}`,
      livemode: false,
      metadata: body.metadata ?? {},
      next_action: null,
      payment_method: body.payment_method,
      payment_method_types: ['card'],
      receipt_email: null,
      setup_future_usage: null,
      status: declined ? 'requires_payment_method' : 'succeeded',
      idempotency_key: key,
    };
    this.intents.set(id, intent);
    // A succeeded PaymentIntent can be refunded, as any paid one (POST /v1/refunds).
    if (!declined) this.paid(id, amount, String(body.currency));
    this.ledger.charges.push({
      reference: key,
      providerId: id,
      amount,
      currency: String(body.currency).toUpperCase(),
      status: String(intent.status),
      at: new Date().toISOString(),
    });
    const { idempotency_key: _key, ...visible } = intent;
    if (!declined) return { status: 200, body: visible };
    return {
      status: 402,
      body: {
        error: {
          type: 'card_error',
          ...error,
          charge: visible.latest_charge,
          payment_intent: visible,
          doc_url: `https://stripe.com/docs/error-codes/${error.code.replace(/_/g, '-')}`,
        },
      },
    };
  }
}
