// Numbers and dates on documents (SPEC §14 "Documents"): through Intl in the document's
// locale tag (shared/locales.ts), dates as UTC calendar dates. Pure; formatters cached.

const moneyFormats = new Map<string, Intl.NumberFormat | null>();

/** The currency's formatter in `tag` (cached), or null when Intl does not accept the code. */
function currencyFormat(currency: string, tag: string): Intl.NumberFormat | null {
  const key = `${tag} ${currency}`;
  let format = moneyFormats.get(key);
  if (format === undefined) {
    try {
      format = new Intl.NumberFormat(tag, { style: 'currency', currency, currencyDisplay: 'narrowSymbol' });
    } catch {
      format = null;
    }
    moneyFormats.set(key, format);
  }
  return format;
}

/**
 * `minor` (an integer amount in minor units of `currency`, ISO 4217) as money in locale `tag`
 * (BCP 47): the currency's own number of decimals as Intl knows them (2 for EUR, 0 for JPY,
 * 3 for KWD and BHD), exact for any safe integer — the decimal is built as text and handed to
 * Intl as a string, never divided as a float. 150000 EUR in `de` → "1.500,00 €"; in `en-GB`
 * → "€1,500.00"; 5000 JPY → "¥5,000"; 1500 KWD in `en-GB` → "KWD 1.500". A code Intl refuses
 * shows as "<amount with 2 decimals> <code>" and never throws.
 */
export function formatMoney(minor: number, currency: string, tag: string): string {
  const format = currencyFormat(currency, tag);
  const digits = format ? format.resolvedOptions().maximumFractionDigits! : 2;
  const sign = minor < 0 ? '-' : '';
  const units = String(Math.abs(Math.trunc(minor))).padStart(digits + 1, '0');
  const whole = units.slice(0, units.length - digits);
  const decimal = digits === 0 ? whole : `${whole}.${units.slice(units.length - digits)}`;
  if (!format) return `${sign}${decimal} ${currency}`;
  // Intl.NumberFormat formats a decimal string exactly (ECMA-402 "Intl.NumberFormat v3").
  return format.format(`${sign}${decimal}` as unknown as number);
}

const dateFormats = new Map<string, Intl.DateTimeFormat>();

/**
 * An ISO 8601 instant as its UTC calendar date in locale `tag`: `long` ("15 January 2026",
 * "15. Januar 2026") or `short` ("15 Jan 2026", "15.01.2026").
 */
export function formatDate(iso: string, tag: string, style: 'long' | 'short' = 'long'): string {
  const key = `${tag} ${style}`;
  let format = dateFormats.get(key);
  if (format === undefined) {
    format = new Intl.DateTimeFormat(tag, {
      day: 'numeric',
      month: style === 'long' ? 'long' : 'short',
      year: 'numeric',
      timeZone: 'UTC',
    });
    dateFormats.set(key, format);
  }
  return format.format(new Date(iso));
}

const integerFormats = new Map<string, Intl.NumberFormat>();

/** An integer (a quantity) in locale `tag`: 1000000 → "1.000.000" in `de`, "1,000,000" in `en-GB`. */
export function formatInteger(value: number, tag: string): string {
  let format = integerFormats.get(tag);
  if (format === undefined)
    integerFormats.set(tag, (format = new Intl.NumberFormat(tag, { maximumFractionDigits: 0 })));
  return format.format(value);
}

/** A tax percentage (0–100, up to 4 decimals) in locale `tag`, exactly: 19 → "19 %" in `de`, "19%" in `en-GB`. */
export function formatPercent(percentage: number, tag: string): string {
  // `19E-2` is the exact decimal 0.19; percentage / 100 would be a float.
  return new Intl.NumberFormat(tag, { style: 'percent', maximumFractionDigits: 4 }).format(
    `${percentage}E-2` as unknown as number,
  );
}
