// The provider API clients of one process (SPEC §10), made from the configuration: a
// provider without an API key has no client and cannot collect (it still receives events).
import type { Config } from '../config.ts';
import type { ProviderName } from '../shared/provider-names.ts';
import type { CallDeadlines } from './provider-api.ts';
import { PaystackApi } from './paystack/api.ts';
import { StripeApi } from './stripe/api.ts';

export interface ProviderApis {
  /** Present when PAYSTACK_SECRET_KEY is set. */
  paystack: PaystackApi | undefined;
  /** Present when STRIPE_API_KEY is set. */
  stripe: StripeApi | undefined;
  /** Closes the clients' connections. */
  close(): Promise<void>;
}

/** The variable whose absence keeps `provider` from collecting (named in the 422). */
export const API_KEY_VARIABLE: Record<ProviderName, string> = {
  paystack: 'PAYSTACK_SECRET_KEY',
  stripe: 'STRIPE_API_KEY',
};

/**
 * One client per provider that has an API key, with PROVIDER_TIMEOUT as each call's deadline,
 * in real time unless `deadlines` says otherwise (tests with fake providers).
 */
export function createProviderApis(
  config: Pick<Config, 'paystackSecretKey' | 'paystackApiUrl' | 'stripeApiKey' | 'stripeApiUrl' | 'providerTimeoutMs'>,
  deadlines?: CallDeadlines,
): ProviderApis {
  const timeoutMs = config.providerTimeoutMs;
  const paystack =
    config.paystackSecretKey === ''
      ? undefined
      : new PaystackApi({ baseUrl: config.paystackApiUrl, secretKey: config.paystackSecretKey, timeoutMs, deadlines });
  const stripe =
    config.stripeApiKey === ''
      ? undefined
      : new StripeApi({ apiUrl: config.stripeApiUrl, apiKey: config.stripeApiKey, timeoutMs, deadlines });
  return {
    paystack,
    stripe,
    async close() {
      await paystack?.close();
    },
  };
}
