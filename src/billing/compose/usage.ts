// Step 3 of the pipeline (SPEC §12, §15): usage billed in arrears. The invoice of period N+1
// carries the usage of period N, one line per tier touched, and the late usage of periods
// already invoiced as adjustment lines; the prices are the pure models of pricing.ts.
import {
  DECIMALS,
  formatQuantity,
  parsePrice,
  parseQuantity,
  piecesTotal,
  priceUsage,
  type PricedPiece,
} from './pricing.ts';
import { AmountOutOfRangeError } from './errors.ts';
import { toSafeAmount } from './rounding.ts';
import type { ComposeInput, ComposeUsage, InvoiceLineDraft } from './types.ts';

const SCALE = 10n ** BigInt(DECIMALS);
const DATE = new Intl.DateTimeFormat('en-GB', { day: 'numeric', month: 'short', year: 'numeric', timeZone: 'UTC' });

/**
 * `lines` followed by the usage of `input.usage`, in its order (SPEC §15):
 * - an item not billed before (`billed` null) gives one `kind: usage` line per priced piece
 *   (pricing.ts priceUsage: a tier touched, the tier reached, the packages, the units), e.g.
 *   "API calls, Tier 2: 1,001 – 10,000 × 0.40" for 40 minor units of USD: prices (unit and
 *   flat) are shown in the currency's major unit, exactly (majorUnits), quantities as plain
 *   grouped decimals, no currency symbol;
 * - an item billed before (late events, meter policy `bill_next_invoice`) gives one
 *   `kind: adjustment` line of what its quantity costs now minus what was billed (minor
 *   units; none when equal), naming the original period.
 * A line's `quantity` is its units (packages for a package price) when they are a whole
 * number ≥ 1, else 1 with the exact units in the description; `unit_amount` is the unit
 * price when it is a whole number of minor units, else null. Each line is rounded once
 * (roundHalfAwayFromZero). Throws ComposeInputError for a malformed price or quantity and
 * AmountOutOfRangeError beyond Number.MAX_SAFE_INTEGER.
 */
export function usage(lines: readonly InvoiceLineDraft[], input: ComposeInput): readonly InvoiceLineDraft[] {
  if (input.usage.length === 0) return lines;
  const subscriptionPlanId = input.subscription?.plan.id ?? null;
  const out = [...lines];
  for (const item of input.usage) {
    const planId = item.plan_id ?? subscriptionPlanId;
    const pieces = pricedPieces(item);
    if (item.billed === null) {
      for (const p of pieces) out.push(usageLine(item, p, input.currency, planId));
    } else {
      const delta = toSafeAmount(BigInt(piecesTotal(pieces)) - BigInt(item.billed.amount), 'a usage adjustment');
      if (delta !== 0) out.push(adjustmentLine(item, delta, input.currency, planId));
    }
  }
  return out;
}

/**
 * `item`'s priced pieces; an amount beyond 2⁵³ − 1 is refused as AmountOutOfRangeError naming
 * the charge, its meter and period, and the quantity — what an operator needs to find it.
 */
function pricedPieces(item: ComposeUsage): PricedPiece[] {
  try {
    return priceUsage(item.charge.price, item.quantity);
  } catch (error) {
    if (!(error instanceof AmountOutOfRangeError)) throw error;
    const period = `${DATE.format(new Date(item.period_start))} – ${DATE.format(new Date(item.period_end))}`;
    throw new AmountOutOfRangeError(
      `the usage of ${item.charge.name} (${item.charge.meter_id}, ${formatQuantity(parseQuantity(item.quantity))} units, ${period})`,
      error.amount,
    );
  }
}

/** The currency's minor-unit exponent (USD 2, JPY 0, KWD 3), from Intl (ISO 4217 data). */
function minorExponent(currency: string): number {
  return new Intl.NumberFormat('en', { style: 'currency', currency }).resolvedOptions().maximumFractionDigits ?? 2;
}

/**
 * A price in minor units (decimal text, "40", "2.5") as the invoice reader reads it, in the
 * currency's major unit, exactly: "0.40" (40 USD cents), "0.025", "1,250.00"; never rounded.
 * At least the currency's own decimals; grouped with commas like the quantities.
 */
export function majorUnits(minor: string, currency: string): string {
  const exponent = minorExponent(currency);
  const scale = 10n ** BigInt(DECIMALS + exponent);
  const value = parsePrice(minor);
  const whole = (value / scale).toLocaleString('en-US');
  const digits = (value % scale).toString().padStart(DECIMALS + exponent, '0');
  const trimmed = digits.replace(/0+$/, '');
  const fraction = trimmed.length >= exponent ? trimmed : digits.slice(0, exponent);
  return fraction === '' ? whole : `${whole}.${fraction}`;
}

/** The units of a usage line as the line's integer `quantity`, when they are one. */
function wholeUnits(scaled: bigint): number | null {
  if (scaled % SCALE !== 0n) return null;
  const units = scaled / SCALE;
  return units >= 1n && units <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(units) : null;
}

function usageLine(item: ComposeUsage, p: PricedPiece, currency: string, planId: string | null): InvoiceLineDraft {
  const { charge } = item;
  const price = charge.price;
  const whole = wholeUnits(p.quantity);
  let description: string;
  if (p.tier !== null) {
    const low = formatQuantity(p.from + SCALE);
    const range = p.up_to === null ? `${low} and above` : `${low} – ${formatQuantity(p.up_to)}`;
    description = `${charge.name}, Tier ${p.tier}: ${range} × ${majorUnits(p.unit_amount_decimal, currency)}`;
    if (p.flat_amount > 0) description += ` + ${majorUnits(String(p.flat_amount), currency)} flat`;
  } else if (price.model === 'package') {
    description = `${charge.name}: packages of ${formatQuantity(BigInt(price.package_size ?? 0) * SCALE)} × ${majorUnits(p.unit_amount_decimal, currency)}`;
  } else {
    description = `${charge.name} × ${majorUnits(p.unit_amount_decimal, currency)}`;
  }
  if (whole === null) description += ` (${formatQuantity(p.quantity)} units)`;
  if (price.free_units > 0) description += `, after ${formatQuantity(BigInt(price.free_units) * SCALE)} free`;
  const integerPrice = /^\d+$/.test(p.unit_amount_decimal) ? Number(p.unit_amount_decimal) : null;
  return {
    kind: 'usage',
    description,
    amount: p.amount,
    currency,
    quantity: whole ?? 1,
    unit_amount:
      whole !== null && p.flat_amount === 0 && integerPrice !== null && Number.isSafeInteger(integerPrice)
        ? integerPrice
        : null,
    period_start: item.period_start,
    period_end: item.period_end,
    plan_id: planId,
    meter_id: charge.meter_id,
    proration: false,
  };
}

function adjustmentLine(item: ComposeUsage, amount: number, currency: string, planId: string | null): InvoiceLineDraft {
  const period = `${DATE.format(new Date(item.period_start))} – ${DATE.format(new Date(item.period_end))}`;
  const before = formatQuantity(parseQuantity(item.billed?.quantity ?? '0'));
  const now = formatQuantity(parseQuantity(item.quantity));
  return {
    kind: 'adjustment',
    description: `${item.charge.name}, late usage of ${period}: ${before} → ${now} units`,
    amount,
    currency,
    quantity: 1,
    unit_amount: null,
    period_start: item.period_start,
    period_end: item.period_end,
    plan_id: planId,
    meter_id: item.charge.meter_id,
    proration: false,
  };
}
