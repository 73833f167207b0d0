// What a provider API call can come to besides an answer (SPEC §10), in our words, for both
// clients (paystack-api.ts, stripe-api.ts). Messages are built here from facts we choose to
// keep: never a key, never a raw response body, and a provider's own message only after
// anything that looks like a credential has been cut out of it.
import type { CollectingProvider } from '../../config.ts';

/**
 * - `timeout`: no answer within PROVIDER_TIMEOUT.
 * - `unavailable`: no usable answer: connection failed, 5xx, 429, or a 2xx we cannot read.
 * - `unauthorized`: the provider refused our API key (401/403).
 * - `refused`: the provider refused the request itself (another 4xx), with its reason.
 */
export type ProviderFailure = 'timeout' | 'unavailable' | 'unauthorized' | 'refused';

/** A provider call that did not succeed. `message` is safe to log and to show a client. */
export class ProviderCallError extends Error {
  readonly provider: CollectingProvider;
  readonly failure: ProviderFailure;
  /** The provider's HTTP status, when an answer arrived. */
  readonly providerStatus: number | null;
  /** The provider's error code (`duplicate_reference`, `parameter_invalid_integer`, …), if it gave one. */
  readonly providerCode: string | null;

  constructor(
    provider: CollectingProvider,
    failure: ProviderFailure,
    message: string,
    options: { providerStatus?: number | null; providerCode?: string | null } = {},
  ) {
    super(message);
    this.name = 'ProviderCallError';
    this.provider = provider;
    this.failure = failure;
    this.providerStatus = options.providerStatus ?? null;
    this.providerCode = options.providerCode ?? null;
  }

  /**
   * True when the provider may have acted on the request although we got no answer (a
   * timeout, a 5xx, a cut connection): the caller must not assume nothing happened.
   */
  get outcomeUnknown(): boolean {
    return this.failure === 'timeout' || this.failure === 'unavailable';
  }
}

/** Provider credentials by shape: Paystack/Stripe secret, restricted and publishable keys, Stripe webhook secrets. */
// No word boundary in front: `0sk_live_…` is still a key (over-redacting a word costs nothing).
const CREDENTIAL = /(?:sk|rk|pk)_(?:test|live)?_?[A-Za-z0-9_]{4,}|whsec_[A-Za-z0-9]+/g;
const MAX_MESSAGE = 300;

/**
 * `text` from a provider, made safe to log and show: each of `secrets` and anything shaped
 * like a credential replaced by `[redacted]`, control characters dropped, at most 300
 * characters. Returns '' for anything that is not a string.
 */
export function scrubProviderText(text: unknown, secrets: readonly string[]): string {
  if (typeof text !== 'string') return '';
  // Control characters first: replacing them must not be what joins a secret together again.
  let safe = [...text].map((c) => (c < ' ' || c === '\x7f' ? ' ' : c)).join('');
  for (const secret of secrets) if (secret.trim() !== '') safe = safe.split(secret).join('[redacted]');
  safe = safe.replace(CREDENTIAL, '[redacted]');
  return safe.length > MAX_MESSAGE ? `${safe.slice(0, MAX_MESSAGE - 1)}…` : safe;
}

/** Display names for messages. */
export const PROVIDER_NAMES: Record<CollectingProvider, string> = { paystack: 'Paystack', stripe: 'Stripe' };
