// A fake Stripe API for tests (shapes from stripe/openapi fixtures3.json's `checkout.session`
// and Stripe's error object `{error: {type, code, message, param}}`): POST /v1/checkout/sessions,
// form-encoded bodies as Stripe's library sends them (`a[b][0][c]=v`), `Authorization: Bearer
// <key>` checked, Idempotency-Key honoured (same key and body → the same answer; another body →
// 400 idempotency_error), every call recorded, errors and timeouts on demand (queue()).
import type { TestContext } from 'node:test';
import { FakeProviderServer, type FakeAnswer, type RecordedCall } from './fake-provider.ts';

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

function stripeError(status: number, type: string, message: string, extra: Record<string, string> = {}): FakeAnswer {
  return { status, body: { error: { type, message, ...extra } } };
}

export class FakeStripe extends FakeProviderServer {
  readonly sessions = new Map<string, Record<string, unknown>>();
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

  #route(call: RecordedCall): FakeAnswer {
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
        : stripeError(404, 'invalid_request_error', `Unrecognized request URL (${call.method}: ${call.path}).`);
    if (typeof key === 'string') this.#idempotent.set(key, { raw: call.raw, answer });
    return answer;
  }

  #createSession(body: Record<string, unknown>): FakeAnswer {
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
}
