// When the worker asks a provider again about a charge left `unknown` (SPEC §10 "Outcomes"),
// pure. The wait grows with the attempt's age — 1 min, 1, 2, 4 … — up to 1 hour; after a day
// of no usable answer (31 calls, the charge included) it asks once a day for as long as the
// invoice is open: a charge that may have taken money is never left unasked about (an open
// invoice need not have a dunning case whose step would ask, and a webhook can be lost).
// Measured in the clock the charge runs in, so a test clock's day costs the provider the same
// few calls as a real day (SPEC §11), not one per clock minute.

/** The first wait after an `unknown` answer (ms). */
export const RESOLVE_DELAY_MS = 60_000;
/** The longest wait between two asks (ms). */
export const MAX_RESOLVE_DELAY_MS = 60 * 60_000;
/** How long after the attempt began the worker asks at most hourly (ms); then daily. */
export const RESOLVE_WINDOW_MS = 24 * 60 * 60_000;
/** The wait between two asks once the attempt is RESOLVE_WINDOW_MS old (ms). */
export const DAILY_RESOLVE_DELAY_MS = 24 * 60 * 60_000;

/**
 * Milliseconds until the next ask about an `unknown` charge whose attempt began `waitedMs`
 * ago (its `created_at` to now, in the charge's clock): the age itself, at least
 * RESOLVE_DELAY_MS and at most MAX_RESOLVE_DELAY_MS; DAILY_RESOLVE_DELAY_MS once it is
 * RESOLVE_WINDOW_MS old.
 */
export function resolveDelayMs(waitedMs: number): number {
  if (waitedMs >= RESOLVE_WINDOW_MS) return DAILY_RESOLVE_DELAY_MS;
  return Math.min(Math.max(waitedMs, RESOLVE_DELAY_MS), MAX_RESOLVE_DELAY_MS);
}
