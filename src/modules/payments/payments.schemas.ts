// The payment and refund resources, defined once: these TypeBox schemas validate,
// serialize and document the routes, and `Payment`/`Refund` are their static types.
import Type, { type Static } from 'typebox';
import { Nullable, nullableTimestamp, pageOf, StringEnum, timestamp } from '../../http/schemas.ts';
import { PAYMENT_STATUSES, REFUND_STATUSES } from '../../db/tables/payments.table.ts';

export const PAYMENT_SORT_FIELDS = ['created_at', 'amount'] as const;
export const REFUND_SORT_FIELDS = ['created_at', 'amount'] as const;

const minorUnits = Type.Integer({ minimum: 0, description: 'Minor units of `currency` (5000 = 50.00).' });
const currency = Type.String({ pattern: '^[A-Z]{3}$', examples: ['NGN'] });

const paymentProperties = {
  id: Type.String({ examples: ['pay_01JD3Q7Z8X9Y0A1B2C3D4E5F6G'] }),
  customer_id: Nullable(Type.String()),
  subscription_id: Nullable(Type.String()),
  invoice_id: Nullable(
    Type.String({
      description:
        "The invoice (`inv_…`) this payment settled (SPEC §9), or null: it settled none (a payment in another currency, after its invoice was voided, or not attributed to a subscription). What an invoice did not take stays here, unapplied: the sum of the `amount`s of an invoice's payments minus its `amount_paid`.",
    }),
  ),
  provider: Type.String({ examples: ['paystack'] }),
  provider_reference: Type.String({
    description: "The provider's id of the payment (Paystack transaction reference, Stripe PaymentIntent id).",
  }),
  amount: minorUnits,
  amount_refunded: Type.Integer({
    minimum: 0,
    description: 'The sum of the succeeded refunds, minor units; never above `amount`.',
  }),
  currency,
  status: StringEnum(PAYMENT_STATUSES),
  failure_reason: Nullable(Type.String()),
  paid_at: nullableTimestamp,
  created_at: timestamp,
  updated_at: timestamp,
};

const PAYMENT_EXAMPLE = {
  id: 'pay_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
  customer_id: 'cus_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
  subscription_id: 'sub_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
  invoice_id: 'inv_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
  provider: 'paystack',
  provider_reference: 'T685312322670591',
  amount: 5000,
  amount_refunded: 0,
  currency: 'NGN',
  status: 'succeeded',
  failure_reason: null,
  paid_at: '2026-01-29T10:00:03.000Z',
  created_at: '2026-01-29T10:00:04.120Z',
  updated_at: '2026-01-29T10:00:04.120Z',
} as const;

export const paymentSchema = Type.Object(paymentProperties, {
  $id: 'Payment',
  description: 'A charge reported by a payment provider (Paystack, Stripe), attributed to a customer and subscription.',
  examples: [PAYMENT_EXAMPLE],
});

/** A payment as the API returns it (SPEC §4 fields). Amounts in minor units. */
export type Payment = Static<typeof paymentSchema>;

export const paymentListSchema = pageOf('PaymentList', paymentSchema);

/** The data of `payment.merged`: the surviving payment and the id of the one folded into it. */
export const mergedPaymentSchema = Type.Object(
  {
    ...paymentProperties,
    merged_payment_id: Type.String({ description: 'The payment folded into this one; it no longer exists.' }),
  },
  {
    $id: 'MergedPayment',
    description: 'A payment after a second record of the same charge was folded into it.',
    examples: [{ ...PAYMENT_EXAMPLE, merged_payment_id: 'pay_01JD3Q80AAAAAAAAAAAAAAAAAA' }],
  },
);

export const refundSchema = Type.Object(
  {
    id: Type.String({ examples: ['re_01JD3Q7Z8X9Y0A1B2C3D4E5F6G'] }),
    payment_id: Type.String(),
    provider: Type.String(),
    provider_reference: Type.String({
      description:
        "The provider's id of the refund, as its events name it. A refund requested through the API carries the id the provider's create call returned (Stripe `re_…`, Paystack's refund id) — or, while the provider has not answered, our own `id` — until the provider's event names it.",
    }),
    amount: minorUnits,
    currency,
    status: StringEnum(REFUND_STATUSES, {
      description:
        "`pending`: requested through the API (POST /api/payments/{id}/refund), waiting for the provider's event; it counts against what may still be refunded, not in the payment's `amount_refunded`. `succeeded`: the money went back. `failed`: the refund failed, was cancelled or was refused by the provider (final); it does not count.",
    }),
    reason: Nullable(
      Type.String({
        description: 'Why the refund was requested (API refunds); null for refunds the provider reported.',
      }),
    ),
    failure_reason: Nullable(
      Type.String({ description: 'Why the provider refused the refund request (status `failed`); null otherwise.' }),
    ),
    refunded_at: nullableTimestamp,
    created_at: timestamp,
    updated_at: timestamp,
  },
  {
    $id: 'Refund',
    description:
      'Money returned on a payment: requested through the API (pending until the provider reports it) or reported by the provider.',
    examples: [
      {
        id: 're_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
        payment_id: 'pay_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
        provider: 'paystack',
        provider_reference: '3018284',
        amount: 2000,
        currency: 'NGN',
        status: 'succeeded',
        reason: 'requested_by_customer',
        failure_reason: null,
        refunded_at: '2026-02-02T09:12:00.000Z',
        created_at: '2026-02-02T09:12:01.500Z',
        updated_at: '2026-02-02T09:12:01.500Z',
      },
    ],
  },
);

/** A refund as the API returns it. Amount in minor units; `failed` refunds do not count in `amount_refunded`. */
export type Refund = Static<typeof refundSchema>;

export const refundListSchema = pageOf('RefundList', refundSchema);
