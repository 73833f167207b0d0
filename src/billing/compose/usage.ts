// Step 3 of the pipeline (SPEC §12, §15): usage billed in arrears. The invoice of period N+1
// carries the usage of period N, one line per tier touched, and the late usage of periods
// already invoiced as adjustment lines; the prices are the pure models of pricing.ts.
import { DECIMALS, formatQuantity, parseQuantity, piecesTotal, priceUsage, type PricedPiece } from './pricing.ts';
import { toSafeAmount } from './rounding.ts';
import type { ComposeInput, ComposeUsage, InvoiceLineDraft } from './types.ts';

const SCALE = 10n ** BigInt(DECIMALS);
const DATE = new Intl.DateTimeFormat('en-GB', { day: 'numeric', month: 'short', year: 'numeric', timeZone: 'UTC' });

/**
 * `lines` followed by the usage of `input.usage`, in its order (SPEC §15):
 * - an item not billed before (`billed` null) gives one `kind: usage` line per priced piece
 *   (pricing.ts priceUsage: a tier touched, the tier reached, the packages, the units), e.g.
 *   "API calls, Tier 2: 1,001 – 10,000 × 0.40": unit prices are shown in minor units exactly
 *   as the plan gives them, quantities as plain grouped decimals, no currency;
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
  const planId = input.subscription?.plan.id ?? null;
  const out = [...lines];
  for (const item of input.usage) {
    const pieces = priceUsage(item.charge.price, item.quantity);
    if (item.billed === null) {
      for (const p of pieces) out.push(usageLine(item, p, input.currency, planId));
    } else {
      const delta = toSafeAmount(BigInt(piecesTotal(pieces)) - BigInt(item.billed.amount), 'a usage adjustment');
      if (delta !== 0) out.push(adjustmentLine(item, delta, input.currency, planId));
    }
  }
  return out;
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
    description = `${charge.name}, Tier ${p.tier}: ${range} × ${p.unit_amount_decimal}`;
    if (p.flat_amount > 0) description += ` + ${p.flat_amount} flat`;
  } else if (price.model === 'package') {
    description = `${charge.name}: packages of ${formatQuantity(BigInt(price.package_size ?? 0) * SCALE)} × ${p.unit_amount_decimal}`;
  } else {
    description = `${charge.name} × ${p.unit_amount_decimal}`;
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
