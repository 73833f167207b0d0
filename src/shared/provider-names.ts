// The payment providers this service speaks to (SPEC §5, §10), named once. Everything that
// lists them derives from here: configuration (DEFAULT_PROVIDER), the adapter registry
// (providers/registry.ts: one adapter per name), the API clients, the `provider` enums of the
// API. It sits in shared/ because config.ts, below the providers, validates against it.

/** Every provider's name: the `p` of POST /api/notify and the `provider` of its records. */
export const PROVIDER_NAMES = ['paystack', 'stripe'] as const;

/** One of PROVIDER_NAMES. */
export type ProviderName = (typeof PROVIDER_NAMES)[number];

/** Whether `value` is one of PROVIDER_NAMES (`manual`, an unknown name or a prototype key is not). */
export function isProviderName(value: string): value is ProviderName {
  return (PROVIDER_NAMES as readonly string[]).includes(value);
}
