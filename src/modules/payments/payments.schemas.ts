// The payment and refund resources, defined once: these TypeBox schemas validate,
// serialize and document the routes, and `Payment`/`Refund` are their static types.
import Type, { type Static } from 'typebox';
import { Nullable, nullableTimestamp, pageOf, StringEnum, timestamp } from '../../http/schemas.ts';
import { PAYMENT_STATUSES, REFUND_STATUSES } from './payments.table.ts';

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
    provider_reference: Type.String({ description: "The provider's id of the refund." }),
    amount: minorUnits,
    currency,
    status: StringEnum(REFUND_STATUSES, {
      description:
        "`failed`: the refund failed or was cancelled at the provider (final); it does not count in the payment's `amount_refunded`.",
    }),
    refunded_at: timestamp,
    created_at: timestamp,
    updated_at: timestamp,
  },
  {
    $id: 'Refund',
    description: 'Money returned on a payment, as the provider reported it.',
    examples: [
      {
        id: 're_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
        payment_id: 'pay_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
        provider: 'paystack',
        provider_reference: '3018284',
        amount: 2000,
        currency: 'NGN',
        status: 'succeeded',
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
