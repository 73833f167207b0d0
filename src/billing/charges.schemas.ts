// The `data` of `invoice.payment_attempted` (SPEC §10): the invoice after an automatic charge
// was recorded, and the attempt with its outcome.
import Type, { type Static } from 'typebox';
import { ref } from '../http/schemas.ts';
import { invoiceSchema } from '../modules/invoices/invoices.schemas.ts';
import { paymentAttemptSchema } from '../modules/payment-attempts/payment-attempts.schemas.ts';

/** The first example a component schema carries. */
function exampleOf(schema: object): unknown {
  return (schema as { examples?: unknown[] }).examples?.[0];
}

export const paymentAttemptedSchema = Type.Object(
  { invoice: ref(invoiceSchema), attempt: ref(paymentAttemptSchema) },
  {
    $id: 'InvoicePaymentAttempted',
    description:
      'An automatic charge of a saved method and what it came to: `attempt.status` `succeeded`, `failed` (a decline: `failure_code`) or `requires_action` (the customer must act: `url`).',
    examples: [{ invoice: exampleOf(invoiceSchema), attempt: exampleOf(paymentAttemptSchema) }],
  },
);

export type PaymentAttempted = Static<typeof paymentAttemptedSchema>;
