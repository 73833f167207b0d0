// A refund request (SPEC §10 "Refunds from the API"), defined once: this TypeBox schema
// validates and documents the body of POST /api/payments/{id}/refund; the answer is the
// `Refund` resource (payments.schemas.ts).
import Type, { type Static } from 'typebox';
import { Nullable } from '../http/schemas.ts';

/** Longest reason accepted: Stripe's metadata values hold 500 characters. */
export const MAX_REFUND_REASON_LENGTH = 500;

const refundRequestFields = Type.Object(
  {
    amount: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: Number.MAX_SAFE_INTEGER,
        description:
          'Minor units to refund, at most what may still be refunded (`amount` − succeeded − pending refunds). Default: all of it.',
        examples: [2000],
      }),
    ),
    reason: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: MAX_REFUND_REASON_LENGTH,
        pattern: '^[^\\u0000]*$',
        description:
          "Why. Stripe: sent as its `reason` when it is `duplicate`, `fraudulent` or `requested_by_customer`, else in the refund's metadata; Paystack: in `merchant_note`.",
        examples: ['requested_by_customer'],
      }),
    ),
  },
  { additionalProperties: false },
);

export type RefundRequestInput = Static<typeof refundRequestFields>;

/** Optional: without a body everything that may still be refunded is. */
export const refundRequestBody = Type.Unsafe<RefundRequestInput | null>({
  ...Nullable(refundRequestFields),
  description: 'Optional: without a body (or an empty one) everything that may still be refunded is refunded.',
  examples: [{ amount: 2000, reason: 'requested_by_customer' }],
});
