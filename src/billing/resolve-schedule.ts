// When the worker asks a provider again about a charge left `unknown` (SPEC §10 "Outcomes"),
// pure. The wait grows with the attempt's age — 1 min, 1, 2, 4 … — up to 1 hour; after a day
// of no usable answer (31 calls, the charge included) the worker stops asking on its own: the
// attempt stays `unknown`, a dunning step's charge asks once more, and the provider's webhook
// still records the payment. Measured in the clock the charge runs in, so a test clock's day
// costs the provider the same few calls as a real day (SPEC §11), not one per clock minute.

/** The first wait after an `unknown` answer (ms). */
export const RESOLVE_DELAY_MS = 60_000;
/** The longest wait between two asks (ms). */
export const MAX_RESOLVE_DELAY_MS = 60 * 60_000;
/** How long after the attempt began the worker keeps asking on its own (ms). */
export const RESOLVE_WINDOW_MS = 24 * 60 * 60_000;

/**
 * Milliseconds until the next ask about an `unknown` charge whose attempt began `waitedMs`
 * ago (its `created_at` to now, in the charge's clock): the age itself, at least
 * RESOLVE_DELAY_MS and at most MAX_RESOLVE_DELAY_MS; null once it is RESOLVE_WINDOW_MS old
 * (stop asking).
 */
export function resolveDelayMs(waitedMs: number): number | null {
  if (waitedMs >= RESOLVE_WINDOW_MS) return null;
  return Math.min(Math.max(waitedMs, RESOLVE_DELAY_MS), MAX_RESOLVE_DELAY_MS);
}
