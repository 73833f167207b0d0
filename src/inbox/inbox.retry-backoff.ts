// When the worker retries an inbox row whose processing failed (SPEC §5), pure.
// Exponential from 30 s, doubling, capped at 6 h; after 20 attempts (≈ 2.6 days of retrying) it stops
// and the row stays `failed` with its last error for an operator.

export const FIRST_RETRY_MS = 30_000;
export const MAX_RETRY_DELAY_MS = 6 * 60 * 60 * 1000;
export const MAX_ATTEMPTS = 20;

/** Milliseconds before the next attempt after `attempts` failed ones (≥ 1); null = give up. */
export function retryDelayMs(attempts: number): number | null {
  if (attempts >= MAX_ATTEMPTS) return null;
  const exponent = Math.max(0, attempts - 1);
  return Math.min(FIRST_RETRY_MS * 2 ** exponent, MAX_RETRY_DELAY_MS);
}
