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

// RFC 3339 §5.6 `date-time`, as JSON Schema's `date-time` format names it: `T` and `Z` in
// either case, a numeric offset only as ±HH:MM. No leap second (`:60`): an instant in
// milliseconds since the epoch cannot hold one.
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:[Zz]|([+-])(\d{2}):(\d{2}))$/;

/**
 * The instant `text` names, in ms since the epoch, or NaN when `text` is not an RFC 3339
 * date-time (SPEC §2 "Time") of a real calendar day: `2026-02-30…`, `24:00:00`, a `:60` leap
 * second and offsets past ±23:59 are NaN. Fractions past milliseconds are truncated.
 * Computed field by field, never by `Date.parse`, which reads years below 100 as 19xx/20xx
 * in some forms and returns NaN for others the format allows. The result may lie outside
 * [MIN_TIMESTAMP, MAX_TIMESTAMP]: callers bound it (isStorableTime).
 */
export function parseTimestamp(text: string): number {
  const m = RFC3339.exec(text);
  if (!m) return Number.NaN;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const offsetHours = m[9] === undefined ? 0 : Number(m[9]);
  const offsetMinutes = m[10] === undefined ? 0 : Number(m[10]);
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return Number.NaN;
  if (hour > 23 || minute > 59 || second > 59 || offsetHours > 23 || offsetMinutes > 59) return Number.NaN;
  const date = new Date(0);
  // setUTCFullYear takes the year as given (Date.UTC maps 0–99 to 1900–1999).
  date.setUTCFullYear(year, month - 1, day);
  date.setUTCHours(hour, minute, second, Number((m[7] ?? '0').slice(0, 3).padEnd(3, '0')));
  const offsetMs = (m[8] === '-' ? -1 : 1) * (offsetHours * 60 + offsetMinutes) * 60_000;
  return date.getTime() - offsetMs;
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}
