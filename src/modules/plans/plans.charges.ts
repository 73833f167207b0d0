// The metered charges of a plan (SPEC §15): their shape, as stored in `plans.charges` and
// as the API shows them, and the rules a charge must satisfy to be created. Pricing a
// quantity with them is the billing core's (billing/compose/pricing.ts).

/** The decimals a unit price or a quantity carries (SPEC §15 `unit_amount_decimal`: up to 12). */
export const DECIMALS = 12;

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

/** The largest unit or tier price (minor units), as a plan's amount and an integer `unit_amount`. */
export const MAX_UNIT_PRICE = 1_000_000_000_000;

/** A non-negative decimal without exponent, sign or leading zeros: "0", "12", "0.40". */
export const DECIMAL = /^(0|[1-9]\d*)(\.\d+)?$/;

/**
 * Why `price` cannot bill (SPEC §15), or null when it can: a model's fields present and no
 * other's, prices non-negative decimals of ≤ 12 decimals and ≤ MAX_UNIT_PRICE, tiers with ascending integer `up_to`
 * and the last one null, a package size ≥ 1, free units ≥ 0. Plan creation answers its
 * message as a 400 `validation_error`.
 */
export function priceProblem(price: ChargePrice): string | null {
  const decimalProblem = (text: string, what: string): string | null => {
    const match = DECIMAL.exec(text);
    if (match === null) return `${what} "${text}" is not a non-negative decimal`;
    if ((match[2] ?? '.').length - 1 > DECIMALS) return `${what} "${text}" has more than ${DECIMALS} decimals`;
    if (
      BigInt(match[1]!) > BigInt(MAX_UNIT_PRICE) ||
      (BigInt(match[1]!) === BigInt(MAX_UNIT_PRICE) && /[1-9]/.test(match[2] ?? ''))
    ) {
      return `${what} "${text}" exceeds ${MAX_UNIT_PRICE.toLocaleString('en-US')} minor units`;
    }
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

/** A charge as stored in `plans.charges` (JSON): its meter and its price. */
export interface StoredCharge extends ChargePrice {
  meter_id: string;
}

/** A tier as a client sends it: one of unit_amount (integer) or unit_amount_decimal. */
interface TierInput {
  up_to: number | null;
  unit_amount?: number;
  unit_amount_decimal?: string;
  flat_amount?: number;
}

/** A charge as a client sends it (plans.schemas.ts chargeInput). */
export interface ChargeInputShape {
  meter_id: string;
  model: ChargeModel;
  unit_amount?: number;
  unit_amount_decimal?: string;
  tiers?: readonly TierInput[];
  package_size?: number;
  free_units?: number;
}

/** One unit price of two ways to give it: the integer, or the decimal text; not both. */
function unitPrice(input: { unit_amount?: number; unit_amount_decimal?: string }): string | null | 'both' {
  if (input.unit_amount !== undefined && input.unit_amount_decimal !== undefined) return 'both';
  if (input.unit_amount !== undefined) return String(input.unit_amount);
  return input.unit_amount_decimal ?? null;
}

/**
 * `input` as stored, or why it cannot be (a message naming the field): the unit prices as
 * decimal text (an integer `unit_amount` becomes "40"), absent fields null, free units 0,
 * checked by priceProblem and for exclusive unit_amount / unit_amount_decimal (SPEC §15).
 */
export function storedCharge(input: ChargeInputShape): StoredCharge | string {
  const unit = unitPrice(input);
  if (unit === 'both') return 'give unit_amount or unit_amount_decimal, not both';
  const tiers: PriceTier[] = [];
  for (const [index, tier] of (input.tiers ?? []).entries()) {
    const tierUnit = unitPrice(tier);
    if (tierUnit === 'both') return `tier ${index + 1}: give unit_amount or unit_amount_decimal, not both`;
    if (tierUnit === null) return `tier ${index + 1} needs unit_amount or unit_amount_decimal`;
    tiers.push({ up_to: tier.up_to, unit_amount_decimal: tierUnit, flat_amount: tier.flat_amount ?? 0 });
  }
  const charge: StoredCharge = {
    meter_id: input.meter_id,
    model: input.model,
    unit_amount_decimal: unit,
    tiers: input.tiers === undefined ? null : tiers,
    package_size: input.package_size ?? null,
    free_units: input.free_units ?? 0,
  };
  return priceProblem(charge) ?? charge;
}

/** The charges of a plan row's `charges` JSON ('[]' and a missing column alike: none). */
export function parseCharges(text: string | undefined | null): StoredCharge[] {
  if (text === undefined || text === null || text === '') return [];
  return JSON.parse(text) as StoredCharge[];
}

/** A decimal unit price as the integer the API also shows, when it is one (and a safe integer). */
function integerOf(decimal: string): number | null {
  if (!/^\d+$/.test(decimal)) return null;
  const value = Number(decimal);
  return Number.isSafeInteger(value) ? value : null;
}

/** A stored charge as the API shows it: each unit price as exact decimal text, and as an integer when whole. */
export function chargeOut(charge: StoredCharge): {
  meter_id: string;
  model: ChargeModel;
  unit_amount: number | null;
  unit_amount_decimal: string | null;
  tiers:
    { up_to: number | null; unit_amount: number | null; unit_amount_decimal: string; flat_amount: number }[] | null;
  package_size: number | null;
  free_units: number;
} {
  return {
    meter_id: charge.meter_id,
    model: charge.model,
    unit_amount: charge.unit_amount_decimal === null ? null : integerOf(charge.unit_amount_decimal),
    unit_amount_decimal: charge.unit_amount_decimal,
    tiers:
      charge.tiers === null
        ? null
        : charge.tiers.map((t) => ({
            up_to: t.up_to,
            unit_amount: integerOf(t.unit_amount_decimal),
            unit_amount_decimal: t.unit_amount_decimal,
            flat_amount: t.flat_amount,
          })),
    package_size: charge.package_size,
    free_units: charge.free_units,
  };
}
