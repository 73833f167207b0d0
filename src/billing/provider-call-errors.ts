// The client's errors for a provider the service calls while a request waits (SPEC §10): a
// checkout link, a payment method setup. One mapping, so both answer alike.
import { AppError, ProviderUnavailableError } from '../http/errors.ts';
import { type ProviderCallError, PROVIDER_DISPLAY_NAMES } from '../providers/provider-api.ts';
import { API_KEY_VARIABLE } from '../providers/provider-apis.ts';
import type { ProviderName } from '../shared/provider-names.ts';

/**
 * The error for a failed provider call: the key or the request refused → 422 `invalid_state`
 * (retrying the same request cannot help); no usable answer → 503 `internal_error` (retry
 * later). `details` names the provider, our `reference` and why.
 */
export function providerCallAppError(error: ProviderCallError, reference: string): AppError {
  const details = {
    provider: error.provider,
    reference,
    reason: error.failure,
    provider_status: error.providerStatus,
    provider_code: error.providerCode,
  };
  if (error.outcomeUnknown) return new ProviderUnavailableError(`${error.message}; retry later`, details);
  return new AppError('invalid_state', error.message, details);
}

/** 422 `invalid_state`: `provider` cannot do `what` (e.g. "collect payments") without its API key. */
export function missingApiKeyError(provider: ProviderName, what: string): AppError {
  return new AppError(
    'invalid_state',
    `${PROVIDER_DISPLAY_NAMES[provider]} cannot ${what}: ${API_KEY_VARIABLE[provider]} is not set`,
  );
}
