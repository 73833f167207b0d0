// Exact decimals for meter values (SPEC §15): a value is kept as canonical decimal text and
// added or compared as a BigInt scaled by 10^12, so sums never drift the way binary floats
// do (0.1 + 0.2). PostgreSQL does the same arithmetic in NUMERIC; this is SQLite's, and the
// reader of event properties.

/** Digits allowed before the point in a meter value. */
export const MAX_INTEGER_DIGITS = 18;
/** Digits allowed after the point in a meter value (also the scale of the arithmetic). */
export const MAX_FRACTION_DIGITS = 12;
const SCALE = 10n ** BigInt(MAX_FRACTION_DIGITS);
const DECIMAL = /^(-)?(\d+)(?:\.(\d+))?$/;

/**
 * The canonical text of a decimal given as a JSON number or a string (`"12.50"` → `"12.5"`,
 * `-0` → `"0"`, `3` → `"3"`), or undefined when it is not one: exponents, NaN, Infinity, a
 * leading `+`, more than MAX_INTEGER_DIGITS before or MAX_FRACTION_DIGITS after the point, a
 * JSON number whose digits parsing may have changed (isExactNumber).
 */
export function parseDecimal(input: unknown): string | undefined {
  let text: string;
  if (typeof input === 'number') {
    if (!Number.isFinite(input) || !isExactNumber(input)) return undefined;
    text = String(input);
  } else if (typeof input === 'string') {
    text = input;
  } else {
    return undefined;
  }
  const m = DECIMAL.exec(text);
  if (!m) return undefined;
  const integer = m[2]!.replace(/^0+(?=\d)/, '');
  const fraction = (m[3] ?? '').replace(/0+$/, '');
  if (integer.length > MAX_INTEGER_DIGITS || (m[3] ?? '').length > MAX_FRACTION_DIGITS) {
    // Trailing zeros past the scale change nothing: `1.5000000000000` is fine.
    if (integer.length > MAX_INTEGER_DIGITS || fraction.length > MAX_FRACTION_DIGITS) return undefined;
  }
  const body = fraction === '' ? integer : `${integer}.${fraction}`;
  return m[1] === '-' && body !== '0' ? `-${body}` : body;
}

/**
/**
 * Whether a JSON number still says what its sender wrote: a binary double holds integers
 * exactly up to 2⁵³ − 1 and any decimal of at most 15 significant digits; beyond, digits were
 * lost in parsing (12345678901234567 arrives as …568), so such a value must come as a string.
 */
function isExactNumber(value: number): boolean {
  if (Number.isInteger(value)) return Math.abs(value) <= Number.MAX_SAFE_INTEGER;
  const digits = String(value).replace(/^-/, '').replace('.', '').replace(/^0+/, '');
  return !/e/i.test(digits) && digits.length <= 15;
}

/**
 * `text` (a canonical or PostgreSQL NUMERIC decimal) as a BigInt in units of 10^-12. Throws
 * on text that is not a decimal.
 */
export function scaled(text: string): bigint {
  const m = DECIMAL.exec(text);
  if (!m) throw new Error(`not a decimal: ${text}`);
  const fraction = (m[3] ?? '').padEnd(MAX_FRACTION_DIGITS, '0').slice(0, MAX_FRACTION_DIGITS);
  const magnitude = BigInt(m[2]!) * SCALE + BigInt(fraction);
  return m[1] === '-' ? -magnitude : magnitude;
}

/** The canonical text of a BigInt in units of 10^-12 (`1500000000000n` → `"1.5"`). */
export function unscaled(value: bigint): string {
  const negative = value < 0n;
  const magnitude = negative ? -value : value;
  const integer = (magnitude / SCALE).toString();
  const fraction = (magnitude % SCALE).toString().padStart(MAX_FRACTION_DIGITS, '0').replace(/0+$/, '');
  const body = fraction === '' ? integer : `${integer}.${fraction}`;
  return negative ? `-${body}` : body;
}

/** `text` in canonical form (`"3.500000"` → `"3.5"`): what the API answers. */
export function canonicalDecimal(text: string): string {
  return unscaled(scaled(text));
}

/** The exact sum of decimal texts, canonical; `"0"` for none. */
export function addDecimals(values: Iterable<string>): string {
  let total = 0n;
  for (const value of values) total += scaled(value);
  return unscaled(total);
}

/** The larger of two decimal texts (either may be null: the other wins). */
export function maxDecimal(a: string | null, b: string | null): string | null {
  if (a === null) return b;
  if (b === null) return a;
  return scaled(b) > scaled(a) ? b : a;
}
