// Reading provider payload values into our types, for every adapter: amounts in minor
// units, ISO 4217 currencies, metadata, times. Bad values throw UnusableEventError.
// U+0000 (SPEC §5): display text (names, emails, messages, labels) loses it; a value used
// exactly as sent (identifiers, codes, currencies, amounts) holding it throws NulInValueError.
import { createHash } from 'node:crypto';
import { NulInValueError, UnusableEventError } from './provider.ts';

/** Every ISO 4217 code Node's ICU knows (current codes; no XXX-style test codes). */
const CURRENCIES = new Set(Intl.supportedValuesOf('currency'));
const MAX_KEY_LENGTH = 255;

export type JsonObject = Record<string, unknown>;

export function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `value` when it is an object, else an empty object (for optional nested objects). */
export function readObject(value: unknown): JsonObject {
  return isObject(value) ? value : {};
}

const NUL = '\u0000';

/** A non-empty trimmed string, or null; numbers become their decimal text. */
function trimmedText(value: unknown): string | null {
  if (typeof value === 'number' && Number.isSafeInteger(value)) return String(value);
  if (typeof value !== 'string') return null;
  const trimmed = value.trim();
  return trimmed === '' ? null : trimmed;
}

/**
 * Display text (a name, an email, a message, a label): a non-empty trimmed string without
 * U+0000 — removed, as PostgreSQL text cannot hold it and it never means anything there
 * (SPEC §5) — or null. Numbers become their decimal text. Never for an identifier: readId.
 */
export function readText(value: unknown): string | null {
  return trimmedText(typeof value === 'string' && value.includes(NUL) ? value.replaceAll(NUL, '') : value);
}

/**
 * An identifier or code (`field` is its path in the provider's payload): a non-empty trimmed
 * string, or null; numbers become their decimal text (provider ids). Throws NulInValueError
 * when it holds U+0000: removing it would name another object (SPEC §5).
 */
export function readId(value: unknown, field: string): string | null {
  if (typeof value === 'string' && value.includes(NUL)) throw new NulInValueError(field);
  return trimmedText(value);
}

/** Like `readId`, but throws UnusableEventError naming `field` when absent. */
export function readRequiredId(value: unknown, field: string): string {
  const result = readId(value, field);
  if (result === null) throw new UnusableEventError(`${field} is missing`);
  return result;
}

/**
 * A secret or identifier that is optional to the event (a reusable method's credential): like
 * `readId`, but null instead of an error when it holds U+0000 — the payment is still
 * recorded, the method is just not saved.
 */
export function readVerbatim(value: unknown): string | null {
  return typeof value === 'string' && value.includes(NUL) ? null : trimmedText(value);
}

/**
 * An amount in minor units: a non-negative safe integer, given as a number or as a string
 * of digits (Paystack sends refund amounts as strings). Throws UnusableEventError otherwise.
 */
export function minorUnits(value: unknown, field: string): number {
  if (typeof value === 'string' && value.includes(NUL)) throw new NulInValueError(field);
  const number =
    typeof value === 'string' && /^\s*\d{1,16}\s*$/.test(value)
      ? Number(value)
      : typeof value === 'number'
        ? value
        : Number.NaN;
  if (!Number.isSafeInteger(number) || number < 0) {
    const shown = value === undefined ? 'missing' : JSON.stringify(value)?.slice(0, 40);
    throw new UnusableEventError(`${field} must be a non-negative integer in minor units (got ${shown})`);
  }
  return number;
}

/** An ISO 4217 code, upper-cased. Throws UnusableEventError for anything else (NulInValueError for a NUL). */
export function currencyCode(value: unknown, field: string): string {
  if (typeof value === 'string' && value.includes(NUL)) throw new NulInValueError(field);
  const code = typeof value === 'string' ? value.trim().toUpperCase() : '';
  if (!CURRENCIES.has(code)) {
    const shown = value === undefined ? 'missing' : JSON.stringify(value)?.slice(0, 40);
    throw new UnusableEventError(`${field} must be an ISO 4217 currency code (got ${shown})`);
  }
  return code;
}

/** Like `currencyCode`, but null when absent. */
export function optionalCurrency(value: unknown, field: string): string | null {
  return value === undefined || value === null || value === '' ? null : currencyCode(value, field);
}

/** Metadata keys whose values name our objects: identifiers (readId), never cleaned. */
const METADATA_IDS = new Set(['customer_id', 'subscription_id', 'invoice_id', 'refund_id', 'payment_attempt_id']);

/**
 * The string entries of a provider's metadata at `field` (its path, for errors). Paystack
 * sends an object, `""`, `0` or a JSON string depending on the integration; anything that
 * is not an object reads as empty. Numbers are kept as text; nested values are dropped (we
 * only read flat keys). U+0000 (SPEC §5): a key holding it names nothing of ours and is
 * dropped; a value of one of our id keys (METADATA_IDS) holding it throws NulInValueError;
 * any other value (a merchant's note) loses it.
 */
export function flatMetadata(value: unknown, field: string): Record<string, string> {
  let source = value;
  if (typeof source === 'string' && source.trim().startsWith('{')) {
    try {
      source = JSON.parse(source);
    } catch {
      return {};
    }
  }
  if (!isObject(source)) return {};
  const result: Record<string, string> = {};
  for (const [key, entry] of Object.entries(source)) {
    const value = typeof entry === 'number' && Number.isFinite(entry) ? String(entry) : entry;
    if (typeof value !== 'string' || key.length > 40 || key.includes(NUL)) continue;
    if (value.includes(NUL) && METADATA_IDS.has(key)) throw new NulInValueError(`${field}.${key}`);
    result[key] = value.replaceAll(NUL, '').slice(0, 500);
  }
  return result;
}

/** The earliest provider time believed: no provider we speak to reports anything older. */
const EARLIEST_PROVIDER_TIME_MS = Date.UTC(2000, 0, 1);
/** How far past the receive time a provider's clock may run ahead (clock skew, time zones). */
const PROVIDER_CLOCK_AHEAD_MS = 86_400_000;

/**
 * ISO 8601 UTC with milliseconds from an ISO string or unix seconds. `fallback` is the
 * receive time (or a time already read from the same event): it is returned when the value
 * is absent, not a time, or outside [2000-01-01, fallback + 1 day]. A `paid_at` in year
 * 10000 or 0000 is a provider or integration bug; stored as is it would be refused by
 * PostgreSQL (so the payment is never recorded) and mis-sorted as text by SQLite, while
 * the payment itself is real and must be recorded (SPEC §5).
 */
export function isoTime(value: unknown, fallback: Date): string {
  const latest = fallback.getTime() + PROVIDER_CLOCK_AHEAD_MS;
  const believable = (date: Date) => {
    const ms = date.getTime();
    return !Number.isNaN(ms) && ms >= EARLIEST_PROVIDER_TIME_MS && ms <= latest;
  };
  if (typeof value === 'number' && Number.isFinite(value)) {
    const date = new Date(value * 1000);
    if (believable(date)) return date.toISOString();
  }
  if (typeof value === 'string') {
    const date = new Date(value);
    if (believable(date)) return date.toISOString();
  }
  return fallback.toISOString();
}

/**
 * The key of an event from its parts. A key the inbox cannot store as is — longer than it
 * allows, or holding U+0000, which PostgreSQL text refuses — is stored as the SHA-256 of
 * its UTF-8 instead: deterministic, so a redelivery is still a duplicate, and unlike an
 * escape it cannot collide with an id that spells the escape out.
 */
export function eventKey(...parts: string[]): string {
  const key = parts.join(':');
  return key.length <= MAX_KEY_LENGTH && !key.includes('\u0000')
    ? key
    : `sha256:${createHash('sha256').update(key, 'utf8').digest('hex')}`;
}

/** The key of an event that names no id of its own: the hash of its exact bytes. */
export function bodyHashKey(raw: Buffer): string {
  return `sha256:${createHash('sha256').update(raw).digest('hex')}`;
}

/** `text` with each U+0000 written as the six characters `\u0000`: storable on every database; for display only. */
export function withoutNul(text: string): string {
  return text.replaceAll('\u0000', '\\u0000');
}

/** A card's expiry month 1–12 (a number or a string of digits, as Paystack sends it), else null. */
export function expiryMonth(value: unknown): number | null {
  const month = wholeNumber(value);
  return month !== null && month >= 1 && month <= 12 ? month : null;
}

/** A card's four-digit expiry year (2-digit years are read as 20xx), else null. */
export function expiryYear(value: unknown): number | null {
  const year = wholeNumber(value);
  if (year === null) return null;
  if (year >= 0 && year < 100) return 2000 + year;
  return year >= 1900 && year <= 9999 ? year : null;
}

function wholeNumber(value: unknown): number | null {
  const text = typeof value === 'number' ? String(value) : readText(value);
  return text !== null && /^\d{1,4}$/.test(text) ? Number(text) : null;
}

/** The last four digits of a card or account (exactly four digits), else null. */
export function lastFour(value: unknown): string | null {
  const text = readText(value);
  return text !== null && /^\d{4}$/.test(text) ? text : null;
}

/** A short display label (brand, type): trimmed, lower case, at most `max` characters; else null. */
export function displayLabel(value: unknown, max = 32): string | null {
  const text = readText(value)?.toLowerCase() ?? null;
  return text !== null && text.length <= max ? text : null;
}

/** What a secret is replaced with where a stored payload is shown. */
export const REDACTED = '[redacted]';

/**
 * A copy of `value` (parsed JSON) in which every string `isSecret(key, text)` accepts — `key`
 * being its property name, or null in an array — reads REDACTED. Unchanged parts are shared.
 */
export function redactStrings(value: unknown, isSecret: (key: string | null, text: string) => boolean): unknown {
  const walk = (node: unknown, key: string | null): unknown => {
    if (typeof node === 'string') return isSecret(key, node) ? REDACTED : node;
    if (Array.isArray(node)) return node.map((item) => walk(item, null));
    if (!isObject(node)) return node;
    const copy: JsonObject = {};
    for (const [name, item] of Object.entries(node)) copy[name] = walk(item, name);
    return copy;
  };
  return walk(value, null);
}
