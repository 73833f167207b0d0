// The coupon, promotion code and discount resources (SPEC §14) and their request bodies,
// defined once: these TypeBox schemas validate, serialize and document the routes and the
// coupon events; the API types are their static types.
import Type, { type Static } from 'typebox';
import {
  metadataOut,
  metadataSchema,
  Nullable,
  nullableTimestamp,
  pageOf,
  ref,
  StringEnum,
  timestamp,
  timestampInput,
} from '../../http/schemas.ts';
import { COUPON_DURATIONS } from '../../db/tables/coupons.table.ts';

export const COUPON_SORT_FIELDS = ['created_at', 'name'] as const;
export const PROMOTION_CODE_SORT_FIELDS = ['created_at', 'code'] as const;

/** A promotion code's characters: letters, digits, `-` and `_`, 3 to 40 of them. */
export const PROMOTION_CODE_PATTERN = /^[A-Za-z0-9_-]{3,40}$/;

const COUPON_EXAMPLE = {
  id: 'coupon_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
  name: 'Launch: 20 % off for 3 months',
  percent_off: 20,
  amount_off: null,
  currency: null,
  duration: 'repeating',
  duration_in_months: 3,
  max_redemptions: 100,
  redeem_by: '2026-12-31T23:59:59.000Z',
  applies_to_plans: null,
  times_redeemed: 4,
  valid: true,
  metadata: {},
  created_at: '2026-01-15T10:00:00.000Z',
  updated_at: '2026-01-15T10:00:00.000Z',
  deleted_at: null,
};

export const couponSchema = Type.Object(
  {
    id: Type.String({ examples: ['coupon_01JD3Q7Z8X9Y0A1B2C3D4E5F6G'] }),
    name: Type.String(),
    percent_off: Nullable(
      Type.Number({ description: 'Percent taken off, 0 < x ≤ 100, at most 2 decimals; null for amount_off.' }),
    ),
    amount_off: Nullable(Type.Integer({ description: 'Minor units of `currency` taken off; null for percent_off.' })),
    currency: Nullable(Type.String({ description: 'ISO 4217 of amount_off; null for percent_off.' })),
    duration: StringEnum(COUPON_DURATIONS, {
      description: '`once`: the first invoice after redemption; `repeating`: `duration_in_months`; `forever`.',
    }),
    duration_in_months: Nullable(Type.Integer()),
    max_redemptions: Nullable(Type.Integer()),
    redeem_by: nullableTimestamp,
    applies_to_plans: Nullable(
      Type.Array(Type.String(), { description: 'Only these plans’ lines are discounted; null: every plan.' }),
    ),
    times_redeemed: Type.Integer(),
    valid: Type.Boolean({
      description: 'Can it be redeemed now: not deleted, not past redeem_by, below max_redemptions.',
    }),
    metadata: metadataOut,
    created_at: timestamp,
    updated_at: timestamp,
    deleted_at: nullableTimestamp,
  },
  {
    $id: 'Coupon',
    description: 'How much comes off invoices and for how long (SPEC §14).',
    examples: [COUPON_EXAMPLE],
  },
);
export type Coupon = Static<typeof couponSchema>;
export const couponListSchema = pageOf('CouponList', couponSchema);

export const createCouponBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 255 }),
    // The 2-decimal rule is checked by the service, which says so (a float's multipleOf cannot).
    percent_off: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 100, examples: [20] })),
    amount_off: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000_000_000 })),
    currency: Type.Optional(Type.String({ minLength: 3, maxLength: 3, description: 'ISO 4217, with amount_off.' })),
    duration: StringEnum(COUPON_DURATIONS),
    duration_in_months: Type.Optional(Type.Integer({ minimum: 1, maximum: 1200, description: 'repeating only' })),
    max_redemptions: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000_000 })),
    redeem_by: Type.Optional(timestampInput),
    applies_to_plans: Type.Optional(
      Type.Array(Type.String({ maxLength: 64 }), { minItems: 1, maxItems: 100, uniqueItems: true }),
    ),
    metadata: Type.Optional(metadataSchema),
  },
  {
    additionalProperties: false,
    description: 'Exactly one of `percent_off` or `amount_off` + `currency`.',
    examples: [{ name: 'Launch', percent_off: 20, duration: 'repeating', duration_in_months: 3 }],
  },
);
export type CreateCouponInput = Static<typeof createCouponBody>;

export const updateCouponBody = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
    metadata: Type.Optional(Nullable(metadataSchema)),
  },
  {
    additionalProperties: false,
    description: 'Only `name` and `metadata` change: what a coupon takes off is fixed once created.',
    examples: [{ name: 'Launch (extended)' }],
  },
);
export type UpdateCouponInput = Static<typeof updateCouponBody>;

const restrictionsSchema = Type.Object(
  {
    first_time_transaction: Type.Boolean({ description: 'Only customers with no paid invoice yet.' }),
    minimum_amount: Nullable(
      Type.Integer({ description: "The first invoice's subtotal must be at least this (minor units)." }),
    ),
    minimum_amount_currency: Nullable(Type.String()),
  },
  { additionalProperties: false },
);

export const promotionCodeSchema = Type.Object(
  {
    id: Type.String({ examples: ['promo_01JD3Q7Z8X9Y0A1B2C3D4E5F6G'] }),
    code: Type.String({ description: 'What a customer types; compared without case.' }),
    coupon_id: Type.String(),
    max_redemptions: Nullable(Type.Integer()),
    expires_at: nullableTimestamp,
    restrictions: restrictionsSchema,
    active: Type.Boolean(),
    times_redeemed: Type.Integer(),
    metadata: metadataOut,
    created_at: timestamp,
    updated_at: timestamp,
  },
  {
    $id: 'PromotionCode',
    description: 'A code customers type to redeem a coupon (SPEC §14); unique among active codes, without case.',
    examples: [
      {
        id: 'promo_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
        code: 'LAUNCH20',
        coupon_id: 'coupon_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
        max_redemptions: 50,
        expires_at: null,
        restrictions: { first_time_transaction: true, minimum_amount: null, minimum_amount_currency: null },
        active: true,
        times_redeemed: 3,
        metadata: {},
        created_at: '2026-01-15T10:00:00.000Z',
        updated_at: '2026-01-15T10:00:00.000Z',
      },
    ],
  },
);
export type PromotionCode = Static<typeof promotionCodeSchema>;
export const promotionCodeListSchema = pageOf('PromotionCodeList', promotionCodeSchema);

export const createPromotionCodeBody = Type.Object(
  {
    // The charset is checked by the service, which says what is allowed.
    code: Type.String({ minLength: 1, maxLength: 100, examples: ['LAUNCH20'] }),
    coupon: Type.String({ maxLength: 64, description: 'The coupon id (`coupon_…`).' }),
    max_redemptions: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000_000 })),
    expires_at: Type.Optional(timestampInput),
    restrictions: Type.Optional(
      Type.Object(
        {
          first_time_transaction: Type.Optional(Type.Boolean()),
          minimum_amount: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000_000_000 })),
          minimum_amount_currency: Type.Optional(Type.String({ minLength: 3, maxLength: 3 })),
        },
        { additionalProperties: false },
      ),
    ),
    active: Type.Optional(Type.Boolean({ default: true })),
    metadata: Type.Optional(metadataSchema),
  },
  {
    additionalProperties: false,
    description: `\`code\`: 3–40 letters, digits, \`-\` or \`_\`; unique among active codes without case.`,
    examples: [{ code: 'LAUNCH20', coupon: 'coupon_01JD3Q7Z8X9Y0A1B2C3D4E5F6G' }],
  },
);
export type CreatePromotionCodeInput = Static<typeof createPromotionCodeBody>;

export const updatePromotionCodeBody = Type.Object(
  {
    active: Type.Optional(Type.Boolean()),
    metadata: Type.Optional(Nullable(metadataSchema)),
  },
  { additionalProperties: false, examples: [{ active: false }] },
);
export type UpdatePromotionCodeInput = Static<typeof updatePromotionCodeBody>;

export const discountSchema = Type.Object(
  {
    id: Type.String({ examples: ['di_01JD3Q7Z8X9Y0A1B2C3D4E5F6G'] }),
    coupon: ref(couponSchema),
    promotion_code: Nullable(Type.String({ description: 'The promotion code (`promo_…`) it was redeemed with.' })),
    customer_id: Type.String(),
    subscription_id: Nullable(Type.String({ description: "Null: the customer's discount, on every subscription." })),
    start: timestamp,
    end: Nullable(
      Type.String({
        format: 'date-time',
        description:
          'Invoices whose period starts before it are discounted. `repeating`: start + duration_in_months; `once`: null until its first invoice, then that period’s end; `forever`: null.',
      }),
    ),
  },
  {
    $id: 'Discount',
    description: 'A coupon applied to a subscription or a customer (SPEC §14).',
    examples: [
      {
        id: 'di_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
        coupon: COUPON_EXAMPLE,
        promotion_code: null,
        customer_id: 'cus_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
        subscription_id: 'sub_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
        start: '2026-01-15T10:00:00.000Z',
        end: '2026-04-15T10:00:00.000Z',
      },
    ],
  },
);
export type Discount = Static<typeof discountSchema>;

/** The request fields that apply a discount (subscription create, customer create/update). */
export const discountRequestFields = {
  coupon: Type.Optional(Type.String({ maxLength: 64, description: 'A coupon id (`coupon_…`) to apply.' })),
  promotion_code: Type.Optional(
    Type.String({ maxLength: 100, description: 'A promotion code to apply: its id (`promo_…`) or the code itself.' }),
  ),
};
