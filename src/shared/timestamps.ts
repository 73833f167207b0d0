// The range of instants this service stores. Every timestamp is kept as ISO 8601 text with a
// four-digit year: SQLite compares that text, PostgreSQL parses it. A year past 9999 is
// written `+010000-…` by Date#toISOString, which sorts before `2026-…` as text and is
// refused by PostgreSQL; so every stored instant, given or computed, stays inside this range.

/** The earliest instant accepted or stored: the Unix epoch. */
export const MIN_TIMESTAMP = '1970-01-01T00:00:00.000Z';
/** The latest instant accepted or stored: the last millisecond of year 9999. */
export const MAX_TIMESTAMP = '9999-12-31T23:59:59.999Z';

export const MIN_TIMESTAMP_MS = Date.parse(MIN_TIMESTAMP);
export const MAX_TIMESTAMP_MS = Date.parse(MAX_TIMESTAMP);

/** True when `ms` (ms since the epoch) is a finite instant inside [MIN_TIMESTAMP, MAX_TIMESTAMP]. */
export function isStorableTime(ms: number): boolean {
  return Number.isFinite(ms) && ms >= MIN_TIMESTAMP_MS && ms <= MAX_TIMESTAMP_MS;
}

/**
 * `from` plus `ms` milliseconds, clamped to MAX_TIMESTAMP (and MIN_TIMESTAMP for negative
 * steps). For deadlines computed from the clock and a duration (expiries, grace ends,
 * period ends): a deadline past year 9999 means "never" for any practical purpose, and
 * storing the last representable instant keeps that meaning and the text order.
 */
export function addClamped(from: Date, ms: number): Date {
  return clampTime(from.getTime() + ms);
}

/**
 * `ms` clamped into [MIN_TIMESTAMP, MAX_TIMESTAMP]; an overflow (NaN or ±Infinity from date
 * arithmetic that left JavaScript's own range) reads as "too late", since every caller
 * computes deadlines forward in time.
 */
export function clampTime(ms: number): Date {
  if (Number.isNaN(ms) || ms > MAX_TIMESTAMP_MS) return new Date(MAX_TIMESTAMP_MS);
  return new Date(Math.max(ms, MIN_TIMESTAMP_MS));
}
