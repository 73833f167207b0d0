// The payment and refund resources, defined once: these TypeBox schemas validate,
// serialize and document the routes, and `Payment`/`Refund` are their static types.
import Type, { type Static } from 'typebox';
import { Nullable, nullableTimestamp, StringEnum, timestamp } from '../../http/schemas.ts';
import { PAYMENT_STATUSES, REFUND_STATUSES } from './payments.table.ts';

export const PAYMENT_SORT_FIELDS = ['created_at', 'amount'] as const;
export const REFUND_SORT_FIELDS = ['created_at', 'amount'] as const;

const minorUnits = Type.Integer({ minimum: 0, description: 'Minor units of `currency` (5000 = 50.00).' });
const currency = Type.String({ pattern: '^[A-Z]{3}$', examples: ['NGN'] });

export const paymentSchema = Type.Object({
  id: Type.String({ examples: ['pay_01JD3Q7Z8X9Y0A1B2C3D4E5F6G'] }),
  customer_id: Nullable(Type.String()),
  subscription_id: Nullable(Type.String()),
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
});

/** A payment as the API returns it (SPEC §4 fields). Amounts in minor units. */
export type Payment = Static<typeof paymentSchema>;

export const refundSchema = Type.Object({
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
});

/** A refund as the API returns it. Amount in minor units; `failed` refunds do not count in `amount_refunded`. */
export type Refund = Static<typeof refundSchema>;
