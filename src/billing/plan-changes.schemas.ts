// Plan changes and previews (SPEC §13), defined once: these TypeBox schemas validate,
// serialize and document PATCH /api/subscriptions/{id} and POST /api/invoices/preview.
import Type from 'typebox';
import { Nullable, StringEnum, timestamp, timestampInput } from '../http/schemas.ts';
import { invoiceLineSchema, invoiceSchema } from '../modules/invoices/invoices.schemas.ts';
import { taxRateIdsInput } from '../modules/tax-rates/tax-rates.schemas.ts';
import { subscriptionSchema } from '../modules/subscriptions/subscriptions.schemas.ts';
import { PRORATION_BEHAVIORS } from './plan-change-rules.ts';

const minorUnits = (description: string, minimum?: number) =>
  Type.Integer({ description: `${description} (minor units)`, ...(minimum === undefined ? {} : { minimum }) });

/** The fields of a change, shared by the PATCH and the preview. */
const changeFields = {
  plan_id: Type.Optional(
    Type.String({ minLength: 1, maxLength: 64, description: 'The new plan: active, same currency' }),
  ),
  quantity: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000, description: 'The new quantity (seats)' })),
  proration_behavior: Type.Optional(
    StringEnum(PRORATION_BEHAVIORS, {
      description:
        '`create_prorations`: the lines wait for the next invoice; `always_invoice`: an invoice now; `none`: no lines. Default: `always_invoice` for an upgrade or an interval change, `create_prorations` for a downgrade made immediate.',
    }),
  ),
  proration_date: Type.Optional({
    ...timestampInput,
    description: 'The instant prorated, inside the current period; default now (to the second).',
  }),
  billing_cycle_anchor: Type.Optional(
    StringEnum(['unchanged', 'now'] as const, {
      description:
        '`now`: a new period starts at the proration date (as an interval change does). Default `unchanged`.',
    }),
  ),
  effective: Type.Optional(
    StringEnum(['immediately', 'period_end'] as const, {
      description:
        'Default: `immediately` for an upgrade, an interval change or a trial; `period_end` (scheduled as `pending_update`) for a downgrade.',
    }),
  ),
  coupon: Type.Optional(
    Nullable(
      Type.String({
        maxLength: 64,
        description:
          'A coupon (`coupon_…`) to redeem as the subscription\'s discount, replacing the one it has (SPEC §14); `null` or `""` removes its discount.',
      }),
    ),
  ),
  promotion_code: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 100,
      description:
        "A promotion code (its id `promo_…` or the code itself) to redeem as the subscription's discount, replacing the one it has.",
    }),
  ),
  tax_rate_ids: Type.Optional({
    ...taxRateIdsInput,
    description:
      "The subscription's tax rates (`txr_…`, active — or attached already), replacing its list; `[]` clears it (then the plan's, the customer's or DEFAULT_TAX_RATE_IDS apply, SPEC §14).",
  }),
};

/** PATCH /api/subscriptions/{id}. */
export const changeSubscriptionBody = Type.Object(changeFields, {
  additionalProperties: false,
  examples: [{ plan_id: 'plan_01JD3Q7Z8X9Y0A1B2C3D4E5F6G', quantity: 5 }],
});

/** POST /api/invoices/preview. */
export const previewInvoiceBody = Type.Object(
  { subscription_id: Type.String({ minLength: 1, maxLength: 64 }), ...changeFields },
  {
    additionalProperties: false,
    examples: [{ subscription_id: 'sub_01JD3Q7Z8X9Y0A1B2C3D4E5F6G', plan_id: 'plan_01JD3Q7Z8X9Y0A1B2C3D4E5F6G' }],
  },
);

const { id: _lineId, ...lineFields } = invoiceLineSchema.properties;

/** The invoice a change (or the next renewal) would produce: lines and totals, no id, no number. */
export const invoicePreviewSchema = Type.Object(
  {
    customer_id: Type.String(),
    subscription_id: Type.String(),
    billing_reason: StringEnum(['upcoming'], {
      description: 'Always `upcoming`: Stripe\'s reason for an invoice not issued yet (SPEC §9 "Billing reason")',
    }),
    currency: Type.String({ description: 'ISO 4217, upper case' }),
    period_start: timestamp,
    period_end: timestamp,
    proration_date: Nullable(
      Type.String({
        format: 'date-time',
        description:
          'The instant prorated: send it with the change to get exactly these lines. Null without proration.',
      }),
    ),
    lines: Type.Array(Type.Object(lineFields)),
    subtotal: minorUnits('The subscription, proration, usage and adjustment lines'),
    total_discount: minorUnits('−(the discount lines)', 0),
    total_tax: minorUnits('The tax lines, inclusive ones too (SPEC §14)'),
    total_tax_amounts: invoiceSchema.properties.total_tax_amounts,
    reverse_charge: invoiceSchema.properties.reverse_charge,
    total: minorUnits('Every line but inclusive tax lines; negative: credit for the customer'),
    applied_balance: minorUnits("The customer's credit balance it would take now", 0),
    amount_due: minorUnits('total − applied_balance, never below 0', 0),
  },
  {
    $id: 'InvoicePreview',
    description:
      'An invoice as it would be issued, composed by the same pipeline and never stored (SPEC §13): no id, no number.',
    examples: [
      {
        customer_id: 'cus_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
        subscription_id: 'sub_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
        billing_reason: 'upcoming',
        currency: 'USD',
        period_start: '2026-01-31T10:00:00.000Z',
        period_end: '2026-02-15T10:00:00.000Z',
        proration_date: '2026-01-31T10:00:00.000Z',
        lines: [
          {
            kind: 'proration',
            description: 'Unused time on Basic × 1 after 31 Jan 2026',
            amount: -484,
            currency: 'USD',
            quantity: 1,
            unit_amount: null,
            period_start: '2026-01-31T10:00:00.000Z',
            period_end: '2026-02-15T10:00:00.000Z',
            plan_id: 'plan_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
            proration: true,
          },
          {
            kind: 'proration',
            description: 'Remaining time on Pro × 1 after 31 Jan 2026',
            amount: 968,
            currency: 'USD',
            quantity: 1,
            unit_amount: null,
            period_start: '2026-01-31T10:00:00.000Z',
            period_end: '2026-02-15T10:00:00.000Z',
            plan_id: 'plan_01JD3Q7Z8X9Y0A1B2C3D4E5F6H',
            proration: true,
          },
        ],
        subtotal: 484,
        total_discount: 0,
        total_tax: 0,
        total_tax_amounts: [],
        reverse_charge: false,
        total: 484,
        applied_balance: 0,
        amount_due: 484,
      },
    ],
  },
);

/** `subscription.updated`'s data: the subscription and the fields a change moved, as they were. */
export const subscriptionUpdatedSchema = Type.Object(
  {
    ...subscriptionSchema.properties,
    previous_attributes: Type.Optional(
      Type.Object(
        {},
        {
          additionalProperties: true,
          description:
            "Present after a PATCH (SPEC §13, §14): the fields it moved (`plan_id`, `quantity`, `pending_update`, `billing_cycle_anchor`, the period, `tax_rate_ids`, `discount` — the subscription's own Discount or null), as they were.",
        },
      ),
    ),
  },
  {
    $id: 'SubscriptionUpdate',
    description: 'A subscription after a change; `previous_attributes` as Stripe names it.',
    examples: [
      {
        ...((subscriptionSchema as { examples?: Record<string, unknown>[] }).examples ?? [])[0],
        status: 'active',
        quantity: 5,
        previous_attributes: { plan_id: 'plan_01JD3Q7Z8X9Y0A1B2C3D4E5F6H', quantity: 3, pending_update: null },
      },
    ],
  },
);
