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
