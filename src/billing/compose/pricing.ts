// The pricing models of metered charges (SPEC §15): what a quantity of usage costs under a
// standard, graduated, volume or package price. Exact decimal arithmetic on BigInt scaled by
// 10^12 (prices and quantities carry up to 12 decimals); each tier's money is rounded once,
// half away from zero. Pure: no database, no clock.
import { ComposeInputError } from './errors.ts';
import { roundHalfAwayFromZero, toSafeAmount } from './rounding.ts';

/** The decimals a unit price or a quantity carries (SPEC §15 `unit_amount_decimal`: up to 12). */
export const DECIMALS = 12;
const SCALE = 10n ** BigInt(DECIMALS);

/** The pricing models of SPEC §15, as Stripe names them. */
export const CHARGE_MODELS = ['standard', 'graduated', 'volume', 'package'] as const;
export type ChargeModel = (typeof CHARGE_MODELS)[number];

/**
 * One tier of a graduated or volume price: units up to `up_to` (inclusive; null: no end, the
 * last tier) cost `unit_amount_decimal` each (minor units, a decimal string) plus
 * `flat_amount` (minor units, integer ≥ 0) once when the tier is reached.
 */
export interface PriceTier {
  up_to: number | null;
  unit_amount_decimal: string;
  flat_amount: number;
}

/**
 * A metered charge of a plan (SPEC §15): the meter it bills, its model and price. `unit_amount_decimal`
 * (minor units, decimal string) prices `standard` (per unit) and `package` (per package of
 * `package_size` units); `tiers` price `graduated` and `volume`. `free_units` (≥ 0) are taken
 * off the period's quantity before the model applies.
 */
export interface ChargePrice {
  model: ChargeModel;
  unit_amount_decimal: string | null;
  tiers: readonly PriceTier[] | null;
  package_size: number | null;
  free_units: number;
}

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

const DECIMAL = /^(0|[1-9]\d*)(\.\d+)?$/;

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

/**
 * Why `price` cannot bill (SPEC §15), or null when it can: a model's fields present and no
 * other's, prices non-negative decimals of ≤ 12 decimals, tiers with ascending integer `up_to`
 * and the last one null, a package size ≥ 1, free units ≥ 0. Plan creation answers its
 * message as a 400 `validation_error`.
 */
export function priceProblem(price: ChargePrice): string | null {
  const decimalProblem = (text: string, what: string): string | null => {
    const match = DECIMAL.exec(text);
    if (match === null) return `${what} "${text}" is not a non-negative decimal`;
    if ((match[2] ?? '.').length - 1 > DECIMALS) return `${what} "${text}" has more than ${DECIMALS} decimals`;
    return null;
  };
  if (!Number.isSafeInteger(price.free_units) || price.free_units < 0) return 'free_units must be an integer ≥ 0';
  const tiered = price.model === 'graduated' || price.model === 'volume';
  if (tiered) {
    if (price.unit_amount_decimal !== null) return `a ${price.model} price is priced by its tiers, not a unit amount`;
    if (price.package_size !== null) return 'package_size belongs to a package price';
    const tiers = price.tiers ?? [];
    if (tiers.length === 0) return `a ${price.model} price needs tiers`;
    let previous = 0;
    for (const [index, tier] of tiers.entries()) {
      const last = index === tiers.length - 1;
      if (last !== (tier.up_to === null)) return 'every tier but the last has up_to; the last has up_to null';
      if (tier.up_to !== null) {
        if (!Number.isSafeInteger(tier.up_to) || tier.up_to <= previous) {
          return `tiers ascend: up_to ${tier.up_to} must be an integer above ${previous}`;
        }
        previous = tier.up_to;
      }
      const problem = decimalProblem(tier.unit_amount_decimal, `tier ${index + 1}'s unit amount`);
      if (problem !== null) return problem;
      if (!Number.isSafeInteger(tier.flat_amount) || tier.flat_amount < 0) {
        return `tier ${index + 1}'s flat_amount must be an integer ≥ 0`;
      }
    }
    return null;
  }
  if (price.tiers !== null) return `a ${price.model} price has no tiers`;
  if (price.unit_amount_decimal === null) return `a ${price.model} price needs unit_amount or unit_amount_decimal`;
  const problem = decimalProblem(price.unit_amount_decimal, 'the unit amount');
  if (problem !== null) return problem;
  if (price.model === 'package') {
    if (price.package_size === null || !Number.isSafeInteger(price.package_size) || price.package_size < 1) {
      return 'a package price needs an integer package_size ≥ 1';
    }
  } else if (price.package_size !== null) return 'package_size belongs to a package price';
  return null;
}
