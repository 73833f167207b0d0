// The answer of POST /api/notify, defined once: this TypeBox schema serializes and documents it.
import Type, { type Static } from 'typebox';

export const notifyReceiptSchema = Type.Object(
  { received: Type.Literal(true) },
  {
    $id: 'NotifyReceipt',
    description:
      'The event is stored; it was processed, or was a duplicate, ignored, or failed to process (retried by the worker).',
    examples: [{ received: true }],
  },
);

export type NotifyReceipt = Static<typeof notifyReceiptSchema>;

/**
 * The body of POST /api/notify as /openapi.json documents it (never validated: the route reads
 * the raw bytes, which the provider signed): the provider's event exactly as it sent it.
 */
export const notifyBodyDocumentation = {
  type: 'object',
  additionalProperties: true,
  description: "The provider's event, byte for byte as it sent it (Paystack `{event, data}`, Stripe's Event object).",
  examples: [
    {
      event: 'charge.success',
      data: {
        id: 4099260516,
        status: 'success',
        reference: 'T685312322670591',
        amount: 500000,
        currency: 'NGN',
        paid_at: '2026-01-29T10:00:03.000Z',
        channel: 'card',
        metadata: { subscription_id: 'sub_01JD3Q7Z8X9Y0A1B2C3D4E5F6G' },
        customer: { email: 'ada@example.com', customer_code: 'CUS_hdhye17yj8qd2tx' },
      },
    },
  ],
} as const;
