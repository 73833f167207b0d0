// The plan resource and its request bodies, defined once: these TypeBox schemas validate,
// serialize and document the routes; `Plan` and the inputs are their static types.
import Type, { type Static } from 'typebox';
import { metadataOut, metadataSchema, Nullable, pageOf, ref, StringEnum, timestamp } from '../../http/schemas.ts';
import { PLAN_INTERVALS } from '../../db/tables/plans.table.ts';
import { taxRateIdsInput, taxRateIdsOut } from '../tax-rates/tax-rates.schemas.ts';
import { CHARGE_MODELS, MAX_UNIT_PRICE } from './plans.charges.ts';

export const PLAN_SORT_FIELDS = ['created_at', 'amount', 'name'] as const;
/**
 * The largest `interval_count` per interval: a billing period is at most three years, as
 * Stripe bounds a price's recurring interval. Longer periods buy nothing a customer needs
 * and walk `current_period_end` towards year 9999 a few payments at a time.
 */
export const MAX_INTERVAL_COUNT = { day: 1095, week: 156, month: 36, year: 3 } as const;
/** Fields fixed at creation (SPEC §3: prices are immutable). */
export const IMMUTABLE_PLAN_FIELDS = [
  'amount',
  'currency',
  'interval',
  'interval_count',
  'trial_period_days',
  'charges',
] as const;

/** The most metered charges a plan has, and tiers a charge has (Stripe allows 250 tiers; a bill needs few). */
export const MAX_CHARGES = 20;
export const MAX_TIERS = 50;
/** The largest integer money field of a charge (minor units), as a plan's amount. */
const MAX_PRICE = MAX_UNIT_PRICE;

const decimalPrice = Type.String({
  minLength: 1,
  maxLength: 40,
  description: 'Minor units per unit as a decimal string, up to 12 decimals ("0.40"); exclusive with unit_amount',
  examples: ['0.40'],
});
const integerPrice = Type.Integer({
  minimum: 0,
  maximum: MAX_PRICE,
  description: 'Minor units per unit (per package for a package price); exclusive with unit_amount_decimal',
});

const tierInput = Type.Object(
  {
    up_to: Nullable(
      Type.Integer({
        minimum: 1,
        maximum: Number.MAX_SAFE_INTEGER,
        description: 'Inclusive; null on the last tier only',
      }),
    ),
    unit_amount: Type.Optional(integerPrice),
    unit_amount_decimal: Type.Optional(decimalPrice),
    flat_amount: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: MAX_PRICE,
        default: 0,
        description: 'Minor units, once when the tier is reached',
      }),
    ),
  },
  { additionalProperties: false },
);

/** A metered charge as a client creates it (SPEC §15). */
export const chargeInput = Type.Object(
  {
    meter_id: Type.String({ minLength: 1, maxLength: 64, examples: ['meter_01JD3Q7Z8X9Y0A1B2C3D4E5F6G'] }),
    model: StringEnum(CHARGE_MODELS),
    unit_amount: Type.Optional(integerPrice),
    unit_amount_decimal: Type.Optional(decimalPrice),
    tiers: Type.Optional(Type.Array(tierInput, { minItems: 1, maxItems: MAX_TIERS })),
    package_size: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_PRICE, description: 'Units per package' })),
    free_units: Type.Optional(
      Type.Integer({ minimum: 0, maximum: MAX_PRICE, default: 0, description: 'Units of each period not billed' }),
    ),
  },
  { additionalProperties: false },
);

export type ChargeInput = Static<typeof chargeInput>;

const tierOut = Type.Object({
  up_to: Nullable(Type.Integer()),
  unit_amount: Nullable(Type.Integer({ description: 'The unit price when it is whole minor units' })),
  unit_amount_decimal: Type.String({ description: 'The unit price, exactly (minor units)' }),
  flat_amount: Type.Integer(),
});

/** A metered charge as the API shows it. */
export const chargeSchema = Type.Object(
  {
    meter_id: Type.String(),
    model: StringEnum(CHARGE_MODELS),
    unit_amount: Nullable(Type.Integer({ description: 'The unit price when it is whole minor units' })),
    unit_amount_decimal: Nullable(
      Type.String({ description: 'The unit price, exactly (minor units); null for tiered prices' }),
    ),
    tiers: Nullable(Type.Array(tierOut)),
    package_size: Nullable(Type.Integer()),
    free_units: Type.Integer(),
  },
  {
    $id: 'PlanCharge',
    description:
      'A metered charge (SPEC §15), billed in arrears: the invoice of period N+1 carries the usage of period N, one line per tier touched. Prices are minor units; fractions of a minor unit are rounded once per line.',
    examples: [
      {
        meter_id: 'meter_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
        model: 'graduated',
        unit_amount: null,
        unit_amount_decimal: null,
        tiers: [
          { up_to: 1000, unit_amount: 0, unit_amount_decimal: '0', flat_amount: 0 },
          { up_to: 10000, unit_amount: null, unit_amount_decimal: '0.40', flat_amount: 0 },
          { up_to: null, unit_amount: null, unit_amount_decimal: '0.25', flat_amount: 0 },
        ],
        package_size: null,
        free_units: 0,
      },
    ],
  },
);

export type PlanCharge = Static<typeof chargeSchema>;

export const planSchema = Type.Object(
  {
    id: Type.String({ examples: ['plan_01JD3Q7Z8X9Y0A1B2C3D4E5F6G'] }),
    name: Type.String(),
    amount: Type.Integer({ description: 'Price per period in minor units (5000 = 50.00).' }),
    currency: Type.String({ description: 'ISO 4217, upper-case.' }),
    interval: StringEnum(PLAN_INTERVALS),
    interval_count: Type.Integer(),
    trial_period_days: Type.Integer(),
    active: Type.Boolean({ description: 'false = archived: no new subscriptions.' }),
    tax_rate_ids: taxRateIdsOut,
    charges: Type.Array(ref(chargeSchema), { description: 'Metered charges (SPEC §15); immutable' }),
    metadata: metadataOut,
    created_at: timestamp,
    updated_at: timestamp,
  },
  {
    $id: 'Plan',
    description: 'A price: amount per billing period. Prices are immutable; archive a plan and create another.',
    examples: [
      {
        id: 'plan_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
        name: 'Pro monthly',
        amount: 5000,
        currency: 'NGN',
        interval: 'month',
        interval_count: 1,
        trial_period_days: 14,
        active: true,
        tax_rate_ids: [],
        charges: [],
        metadata: { tier: 'pro' },
        created_at: '2026-01-15T10:00:00.000Z',
        updated_at: '2026-01-15T10:00:00.000Z',
      },
    ],
  },
);

export const planListSchema = pageOf('PlanList', planSchema);

/** A plan as the API returns it. */
export type Plan = Static<typeof planSchema>;

export const createPlanBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 255, examples: ['Pro monthly'] }),
    amount: Type.Integer({ minimum: 0, maximum: 1_000_000_000_000, examples: [5000] }),
    // No `pattern`: its failure could only say "not in the expected format"; the service
    // checks the code against ISO 4217 and says so (e.g. for "usd").
    currency: Type.String({ minLength: 3, maxLength: 3, description: 'ISO 4217 code, upper-case.', examples: ['NGN'] }),
    interval: StringEnum(PLAN_INTERVALS),
    // The bound depends on `interval` (MAX_INTERVAL_COUNT); the service checks it and says so.
    interval_count: Type.Optional(
      Type.Integer({
        minimum: 1,
        default: 1,
        description: 'Intervals per billing period; at most three years: day ≤ 1095, week ≤ 156, month ≤ 36, year ≤ 3.',
      }),
    ),
    trial_period_days: Type.Optional(Type.Integer({ minimum: 0, maximum: 730, default: 0 })),
    tax_rate_ids: Type.Optional(taxRateIdsInput),
    charges: Type.Optional(
      Type.Array(chargeInput, {
        maxItems: MAX_CHARGES,
        description:
          'Metered charges (SPEC §15), one per meter: standard (unit_amount[_decimal] per unit), graduated or volume (tiers), package (unit_amount[_decimal] per package_size units).',
      }),
    ),
    metadata: Type.Optional(metadataSchema),
  },
  {
    additionalProperties: false,
    examples: [
      {
        name: 'Pro monthly',
        amount: 5000,
        currency: 'NGN',
        interval: 'month',
        interval_count: 1,
        trial_period_days: 14,
        metadata: { tier: 'pro' },
      },
    ],
  },
);

// Listed so the error can say why they are refused (see plans.routes.ts).
const immutableFields = Object.fromEntries(
  IMMUTABLE_PLAN_FIELDS.map((f) => [f, Type.Optional(Type.Unknown({ description: 'Immutable: refused with 400.' }))]),
);

export const updatePlanBody = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
    active: Type.Optional(Type.Boolean()),
    metadata: Type.Optional(Nullable(metadataSchema)),
    ...immutableFields,
  },
  {
    additionalProperties: false,
    description: 'Only `name`, `active` and `metadata` change; prices are immutable (create a new plan).',
    examples: [{ active: false }],
  },
);

export type CreatePlanInput = Static<typeof createPlanBody>;
/** The changes a client may ask for; the immutable fields never reach the service (plans.routes.ts). */
export interface UpdatePlanInput {
  name?: string;
  active?: boolean;
  metadata?: Record<string, string> | null;
}
