// The provider registry: `p` of POST /api/notify → adapter. A new provider (Razorpay,
// Flutterwave, Paddle…) is one file in this folder plus one line here.
import { type ProviderAdapter, type ProviderEvent, UnusableEventError } from '../provider.ts';
import { rejectNul } from '../provider-values.ts';
import { paystack } from './paystack.ts';
import { stripe } from './stripe.ts';

export const PROVIDERS: Readonly<Record<string, ProviderAdapter>> = Object.freeze({
  [paystack.name]: paystack,
  [stripe.name]: stripe,
});

export const PROVIDER_NAMES: readonly string[] = Object.keys(PROVIDERS);

/** The adapter for `name`, or undefined for an unknown provider. */
export function findProvider(name: string): ProviderAdapter | undefined {
  return Object.hasOwn(PROVIDERS, name) ? PROVIDERS[name] : undefined;
}

/**
 * Our reading of a verified body from `provider` received at `receivedAt` (`parseBody`
 * gives it parsed, once the provider is known; `text` is its JSON text, when known): the
 * adapter's, with the rules that hold whatever the provider. A NUL in the body makes it
 * unusable (provider-values rejectNul; a text without the `\u0000` escape holds none).
 * A payment of 0, succeeded or failed (a Stripe trial or fully credited invoice, Stripe's
 * dashboard test failure, a Paystack card authorization), moves no money and owes none: it
 * is ignored, so it neither renews a subscription nor opens dunning (SPEC §5). Throws
 * UnusableEventError for an unknown provider or a body a handled type cannot use.
 */
export function readProviderEvent(
  provider: string,
  parseBody: () => unknown,
  receivedAt: Date,
  text?: string,
): ProviderEvent {
  const adapter = findProvider(provider);
  if (!adapter) throw new UnusableEventError(`unknown provider ${provider}`);
  const body = parseBody();
  // JSON can only carry U+0000 inside a string as the escape \u0000 (a raw one is a syntax
  // error): a text without it needs no walk through every key and value.
  if (text === undefined || text.includes('\\u0000')) rejectNul(body);
  const event = adapter.normalize(body, receivedAt);
  if ((event.kind === 'payment_succeeded' || event.kind === 'payment_failed') && event.payment.amount === 0) {
    return { kind: 'ignored', reason: 'zero-amount payment' };
  }
  return event;
}

/**
 * A stored body of `provider` as it may be shown (GET /api/provider-events/{id}): the secrets
 * it carries replaced (ProviderAdapter.redact). A body of an unknown provider is shown as is.
 */
export function redactedPayload(provider: string, body: unknown): unknown {
  const adapter = findProvider(provider);
  return adapter ? adapter.redact(body) : body;
}
