// JSON schemas of the payments and refunds routes: they validate, serialize and document.
import { nullableTimestamp, timestamp } from '../../http/schemas.ts';
import { PAYMENT_STATUSES, REFUND_STATUSES } from './payments.table.ts';

export const PAYMENT_SORT_FIELDS = ['created_at', 'amount'] as const;
export const REFUND_SORT_FIELDS = ['created_at', 'amount'] as const;

const minorUnits = { type: 'integer', minimum: 0, description: 'Minor units of `currency` (5000 = 50.00).' } as const;
const currency = { type: 'string', pattern: '^[A-Z]{3}$', examples: ['NGN'] } as const;

export const paymentSchema = {
  type: 'object',
  required: [
    'id',
    'customer_id',
    'subscription_id',
    'provider',
    'provider_reference',
    'amount',
    'amount_refunded',
    'currency',
    'status',
    'failure_reason',
    'paid_at',
    'created_at',
    'updated_at',
  ],
  properties: {
    id: { type: 'string', examples: ['pay_01JD3Q7Z8X9Y0A1B2C3D4E5F6G'] },
    customer_id: { type: ['string', 'null'] },
    subscription_id: { type: ['string', 'null'] },
    provider: { type: 'string', examples: ['paystack'] },
    provider_reference: {
      type: 'string',
      description: "The provider's id of the payment (Paystack transaction reference, Stripe PaymentIntent id).",
    },
    amount: minorUnits,
    amount_refunded: { ...minorUnits, description: 'The sum of the succeeded refunds, minor units; never above `amount`.' },
    currency,
    status: { type: 'string', enum: [...PAYMENT_STATUSES] },
    failure_reason: { type: ['string', 'null'] },
    paid_at: nullableTimestamp,
    created_at: timestamp,
    updated_at: timestamp,
  },
} as const;

export const refundSchema = {
  type: 'object',
  required: [
    'id',
    'payment_id',
    'provider',
    'provider_reference',
    'amount',
    'currency',
    'status',
    'refunded_at',
    'created_at',
    'updated_at',
  ],
  properties: {
    id: { type: 'string', examples: ['re_01JD3Q7Z8X9Y0A1B2C3D4E5F6G'] },
    payment_id: { type: 'string' },
    provider: { type: 'string' },
    provider_reference: { type: 'string', description: "The provider's id of the refund." },
    amount: minorUnits,
    currency,
    status: {
      type: 'string',
      enum: [...REFUND_STATUSES],
      description: '`failed`: the refund failed or was cancelled at the provider (final); it does not count in the payment\'s `amount_refunded`.',
    },
    refunded_at: timestamp,
    created_at: timestamp,
    updated_at: timestamp,
  },
} as const;
