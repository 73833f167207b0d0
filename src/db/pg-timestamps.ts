// PostgreSQL's text form of `timestamptz`/`timestamp` values → the API's ISO 8601 UTC text.
// The text depends on the session: its TimeZone gives the offset, which before standard
// time zones were adopted is local mean time to the second (Africa/Lagos in 1900:
// `1900-01-01 00:13:35+00:13:35`), and years below 1000 are zero-padded (`0001-…`), which
// `Date` reads as 2001. Connections set TimeZone=UTC and DateStyle=ISO (connect.ts); this
// reader is exact whatever the session's TimeZone, so reads never depend on the server's.
import { clampTime, MAX_TIMESTAMP, MIN_TIMESTAMP } from '../shared/timestamps.ts';

// DateStyle ISO: `YYYY-MM-DD HH:MM:SS[.ffffff][±HH[:MM[:SS]]][ BC]`.
const PG_ISO =
  /^(\d{4,})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:([+-])(\d{2})(?::(\d{2}))?(?::(\d{2}))?)?( BC)?$/;

/**
 * The ISO 8601 UTC text (`2026-01-15T10:00:00.123Z`) of a PostgreSQL timestamp as the server
 * sends it in DateStyle ISO; a value without an offset (`timestamp`) is read as UTC.
 * Microseconds are truncated to milliseconds. A value outside 0000–9999 AD (BC years,
 * `infinity`, `-infinity`), which this service never writes (SPEC §2 "Time"), reads as the
 * nearest storable bound (MIN_TIMESTAMP / MAX_TIMESTAMP) so that one such row cannot fail a
 * whole list. Throws on text in another DateStyle: connect.ts always sets ISO.
 */
export function readPgTimestamp(text: string): string {
  // What a UTC session sends for every time this service writes, `YYYY-MM-DD HH:MM:SS[.f…]+00`,
  // is the answer already, rearranged (no Date, no regex: every timestamp of every row read).
  const n = text.length;
  if (n >= 22 && text.endsWith('+00') && text[4] === '-' && text[10] === ' ' && text[13] === ':') {
    if (n === 22) return `${text.slice(0, 10)}T${text.slice(11, 19)}.000Z`;
    if (text[19] === '.' && n <= 29)
      return `${text.slice(0, 10)}T${text.slice(11, 19)}.${text.slice(20, Math.min(23, n - 3)).padEnd(3, '0')}Z`;
  }
  if (text === 'infinity') return MAX_TIMESTAMP;
  if (text === '-infinity') return MIN_TIMESTAMP;
  const m = PG_ISO.exec(text);
  if (!m) throw new Error(`unreadable PostgreSQL timestamp "${text}" (DateStyle must be ISO)`);
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  if (m[12] !== undefined || year > 9999) return m[12] !== undefined ? MIN_TIMESTAMP : MAX_TIMESTAMP;
  const date = new Date(0);
  // setUTCFullYear takes the year as given (Date.UTC maps 0–99 to 1900–1999).
  date.setUTCFullYear(year, month - 1, day);
  date.setUTCHours(hour, minute, second, Number((m[7] ?? '0').slice(0, 3).padEnd(3, '0')));
  const offsetSeconds = Number(m[9] ?? 0) * 3600 + Number(m[10] ?? 0) * 60 + Number(m[11] ?? 0);
  const ms = date.getTime() - (m[8] === '-' ? -1 : 1) * offsetSeconds * 1000;
  // Only years 0000 and 9999 can leave the range by their offset; the instant is kept when it has a four-digit year.
  const iso = new Date(ms).toISOString();
  return iso.length === 24 ? iso : clampTime(ms).toISOString();
}
