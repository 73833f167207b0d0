// The pricing models of metered charges (SPEC §15): what a quantity of usage costs under a
// standard, graduated, volume or package price. Exact decimal arithmetic on BigInt scaled by
// 10^12 (prices and quantities carry up to 12 decimals); each tier's money is rounded once,
// half away from zero. Pure: no database, no clock.
import { ComposeInputError } from './errors.ts';
import { roundHalfAwayFromZero, toSafeAmount } from './rounding.ts';
import { type ChargePrice, DECIMAL, DECIMALS, type PriceTier } from '../../modules/plans/plans.charges.ts';

export type { ChargePrice, PriceTier };
export { DECIMALS };

const SCALE = 10n ** BigInt(DECIMALS);

/** One priced piece of a quantity: a tier touched (graduated), the tier reached (volume), the packages, or the units. */
export interface PricedPiece {
  /** Tier number from 1; null for standard and package prices. */
  tier: number | null;
  /** The tier's bounds in units: `from` exclusive (0 for the first), `up_to` inclusive (null: no end). */
  from: bigint;
  up_to: bigint | null;
  /** Units billed by this piece (scaled by 10^12); packages for a package price (unscaled count × 10^12). */
  quantity: bigint;
  /** The unit price as given (minor units, decimal string). */
  unit_amount_decimal: string;
  flat_amount: number;
  /** quantity × unit price + flat amount, rounded once (minor units). */
  amount: number;
}

/**
 * `text` (a non-negative decimal string, "12", "0.40") scaled by 10^12, exactly. Throws
 * ComposeInputError for anything else or more than 12 decimals (SPEC §15 `unit_amount_decimal`).
 */
export function parsePrice(text: string): bigint {
  const match = DECIMAL.exec(text);
  if (match === null) throw new ComposeInputError(`"${text}" is not a non-negative decimal`);
  const fraction = (match[2] ?? '.').slice(1);
  if (fraction.length > DECIMALS) {
    throw new ComposeInputError(`"${text}" has more than ${DECIMALS} decimals`);
  }
  return BigInt(match[1] ?? '0') * SCALE + BigInt(fraction.padEnd(DECIMALS, '0'));
}

/**
 * A usage quantity (a non-negative decimal string, as aggregateUsage returns it; "1e3" is not
 * one) scaled by 10^12: decimals beyond the 12th are rounded half away from zero, since an
 * aggregate of measured values may carry more than a price can multiply. Throws
 * ComposeInputError for anything but a non-negative decimal.
 */
export function parseQuantity(text: string): bigint {
  const match = DECIMAL.exec(text);
  if (match === null) throw new ComposeInputError(`usage quantity "${text}" is not a non-negative decimal`);
  const fraction = (match[2] ?? '.').slice(1);
  if (fraction.length <= DECIMALS) return parsePrice(text);
  const exact = BigInt((match[1] ?? '0') + fraction);
  const excess = 10n ** BigInt(fraction.length - DECIMALS);
  return (2n * exact + excess) / (2n * excess);
}

/** A scaled quantity as a plain decimal with grouped thousands: 1234500000000000n → "1,234.5". */
export function formatQuantity(scaled: bigint): string {
  const whole = scaled / SCALE;
  const fraction = (scaled % SCALE).toString().padStart(DECIMALS, '0').replace(/0+$/, '');
  const grouped = whole.toString().replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return fraction === '' ? grouped : `${grouped}.${fraction}`;
}

/**
 * The pieces `quantity` (a non-negative decimal string of units) costs under `price` (SPEC
 * §15), in tier order, each rounded once (minor units):
 * - `standard`: one piece, (quantity − free_units) × unit price;
 * - `graduated`: one piece per tier touched, the units inside it × its price, + its flat amount;
 * - `volume`: one piece, every billable unit × the price of the tier the quantity reaches, + its flat amount;
 * - `package`: one piece, ⌈(quantity − free_units) / package_size⌉ packages × the package price.
 * `free_units` come off first; nothing left to bill gives no piece (no line of 0 units).
 * Throws ComposeInputError for a malformed price (checked once more here: a stored plan is
 * validated at creation) and AmountOutOfRangeError beyond Number.MAX_SAFE_INTEGER.
 */
export function priceUsage(price: ChargePrice, quantity: string): PricedPiece[] {
  const free = BigInt(price.free_units) * SCALE;
  const total = parseQuantity(quantity);
  const billable = total > free ? total - free : 0n;
  if (billable === 0n) return [];
  switch (price.model) {
    case 'standard': {
      const unit = requireUnit(price);
      return [piece(null, 0n, null, billable, price.unit_amount_decimal ?? '0', 0, billable * unit)];
    }
    case 'package': {
      const unit = requireUnit(price);
      const size = BigInt(price.package_size ?? 0) * SCALE;
      if (size <= 0n) throw new ComposeInputError('a package price needs a package_size ≥ 1');
      const packages = (billable + size - 1n) / size;
      // Packages are whole: the money is packages × price, scaled once by the price's 10^12.
      return [piece(null, 0n, null, packages * SCALE, price.unit_amount_decimal ?? '0', 0, packages * SCALE * unit)];
    }
    case 'graduated':
    case 'volume':
      return tiered(price.model, requireTiers(price), billable);
  }
}

/** The sum of `pieces`' amounts (minor units; AmountOutOfRangeError beyond Number.MAX_SAFE_INTEGER). */
export function piecesTotal(pieces: readonly PricedPiece[]): number {
  return toSafeAmount(
    pieces.reduce((sum, p) => sum + BigInt(p.amount), 0n),
    'the usage total',
  );
}

function tiered(model: 'graduated' | 'volume', tiers: readonly PriceTier[], billable: bigint): PricedPiece[] {
  const pieces: PricedPiece[] = [];
  let from = 0n;
  for (const [index, tier] of tiers.entries()) {
    const upTo = tier.up_to === null ? null : BigInt(tier.up_to) * SCALE;
    const unit = parsePrice(tier.unit_amount_decimal);
    if (model === 'volume') {
      if (upTo === null || billable <= upTo) {
        return [piece(index + 1, from, upTo, billable, tier.unit_amount_decimal, tier.flat_amount, billable * unit)];
      }
    } else {
      const top = upTo === null || billable < upTo ? billable : upTo;
      const inside = top - from;
      pieces.push(piece(index + 1, from, upTo, inside, tier.unit_amount_decimal, tier.flat_amount, inside * unit));
      if (upTo === null || billable <= upTo) return pieces;
    }
    from = upTo ?? from;
  }
  throw new ComposeInputError('the last tier must have up_to null');
}

function piece(
  tier: number | null,
  from: bigint,
  upTo: bigint | null,
  quantity: bigint,
  unitText: string,
  flat: number,
  scaledMoney: bigint,
): PricedPiece {
  if (!Number.isSafeInteger(flat) || flat < 0)
    throw new ComposeInputError(`a flat amount is an integer ≥ 0, not ${flat}`);
  // quantity and price are both scaled by 10^12: the money is scaled by 10^24, rounded once.
  const variable = roundHalfAwayFromZero(scaledMoney, SCALE * SCALE, 'a usage line');
  return {
    tier,
    from,
    up_to: upTo,
    quantity,
    unit_amount_decimal: unitText,
    flat_amount: flat,
    amount: toSafeAmount(BigInt(variable) + BigInt(flat), 'a usage line'),
  };
}

function requireUnit(price: ChargePrice): bigint {
  if (price.unit_amount_decimal === null) {
    throw new ComposeInputError(`a ${price.model} price needs a unit amount`);
  }
  return parsePrice(price.unit_amount_decimal);
}

function requireTiers(price: ChargePrice): readonly PriceTier[] {
  const tiers = price.tiers;
  if (tiers === null || tiers.length === 0) throw new ComposeInputError(`a ${price.model} price needs tiers`);
  return tiers;
}
