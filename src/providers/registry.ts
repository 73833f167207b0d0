// The provider registry: `p` of POST /api/notify → adapter. A new provider (Razorpay,
// Flutterwave, Paddle…) is a folder here, its name in shared/provider-names.ts and one line
// below: the Record makes tsc refuse a name without an adapter, or an adapter without a name.
import { isProviderName, type ProviderName } from '../shared/provider-names.ts';
import { NulInValueError, type ProviderAdapter, type ProviderEvent, UnusableEventError } from './provider.ts';
import { paystack } from './paystack/events.ts';
import { stripe } from './stripe/events.ts';

/** The adapter of each provider, keyed by its name (PROVIDER_NAMES, in that order). */
export const PROVIDERS: Readonly<Record<ProviderName, ProviderAdapter>> = Object.freeze({ paystack, stripe });

/** The adapter for `name`, or undefined for an unknown provider. */
export function findProvider(name: string): ProviderAdapter | undefined {
  return isProviderName(name) ? PROVIDERS[name] : undefined;
}

/**
 * Our reading of a verified body from `provider` received at `receivedAt` (`parseBody`
 * gives it parsed, once the provider is known): the adapter's, with the rules that hold
 * whatever the provider. U+0000 is the adapters' to read (provider-values: display text
 * loses it; an identifier, code, currency or amount holding it throws NulInValueError).
 * A payment of 0, succeeded or failed (a Stripe trial or fully credited invoice, Stripe's
 * dashboard test failure, a Paystack card authorization), moves no money and owes none: it
 * is ignored, so it neither renews a subscription nor opens dunning (SPEC §5). Throws
 * UnusableEventError for an unknown provider or a body a handled type cannot use.
 */
export function readProviderEvent(provider: string, parseBody: () => unknown, receivedAt: Date): ProviderEvent {
  const adapter = findProvider(provider);
  if (!adapter) throw new UnusableEventError(`unknown provider ${provider}`);
  const event = adapter.normalize(parseBody(), receivedAt);
  if ((event.kind === 'payment_succeeded' || event.kind === 'payment_failed') && event.payment.amount === 0) {
    return { kind: 'ignored', reason: 'zero-amount payment' };
  }
  return event;
}

/**
 * Refuses, before it is stored, a verified body of `provider` (`text`: its JSON text) that
 * holds U+0000 in a value its adapter must use as sent — an identifier, code, currency or
 * amount (SPEC §5): throws NulInValueError, and POST /api/notify answers 400 so the provider
 * retries. JSON carries U+0000 only as the escape `\u0000`, so a text without it costs one
 * scan. Any other reason the event is unusable is left to processing (stored, then `failed`).
 */
export function refuseNulInValues(provider: string, body: unknown, text: string, receivedAt: Date): void {
  if (!text.includes('\\u0000')) return;
  try {
    readProviderEvent(provider, () => body, receivedAt);
  } catch (error) {
    if (error instanceof NulInValueError) throw error;
  }
}

/**
 * A stored body of `provider` as it may be shown (GET /api/provider-events/{id}): the secrets
 * it carries replaced (ProviderAdapter.redact). A body of an unknown provider is shown as is.
 */
export function redactedPayload(provider: string, body: unknown): unknown {
  const adapter = findProvider(provider);
  return adapter ? adapter.redact(body) : body;
}
