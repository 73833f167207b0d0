// The provider registry: `p` of POST /api/notify → adapter. A new provider (Razorpay,
// Flutterwave, Paddle…) is one file in this folder plus one line here.
import type { ProviderAdapter } from '../provider.ts';
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
