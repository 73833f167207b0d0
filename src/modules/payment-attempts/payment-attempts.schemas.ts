// A payment attempt as the API shows it (SPEC §10), defined once: GET /api/invoices/{id} lists
// them and `invoice.payment_attempted` carries one. No secret is part of an attempt: the
// reference is ours, the provider object id is an id, the url a payment page.
import Type, { type Static } from 'typebox';
import { PROVIDER_NAMES } from '../../shared/provider-names.ts';
import { Nullable, nullableTimestamp, StringEnum, timestamp } from '../../http/schemas.ts';
import { ATTEMPT_KINDS, ATTEMPT_STATUSES } from '../../db/tables/payment-attempts.table.ts';
import type { PaymentAttemptRow } from './payment-attempts.ts';

export const paymentAttemptSchema = Type.Object(
  {
    id: Type.String({ examples: ['pat_01JD3Q7Z8X9Y0A1B2C3D4E5F6G'] }),
    invoice_id: Type.String(),
    provider: StringEnum(PROVIDER_NAMES),
    kind: StringEnum(ATTEMPT_KINDS, {
      description: '`checkout`: a payment link for the customer; `charge`: a saved method charged by the service.',
    }),
    reference: Type.String({
      description: 'Ours, unique (`pat-…`): the Paystack reference, the Stripe Idempotency-Key / client_reference_id.',
    }),
    status: StringEnum(ATTEMPT_STATUSES, {
      description:
        '`pending` (call in flight), `unknown` (no usable answer yet: being resolved with the provider), `requires_action` (waiting for the customer), `succeeded`, `failed`.',
    }),
    amount: Type.Integer({ minimum: 1, description: 'What was asked for (minor units)' }),
    currency: Type.String({ description: 'ISO 4217, upper case' }),
    provider_object_id: Nullable(
      Type.String({
        description:
          "The provider's id of what it created: Paystack access code / transaction, Stripe `cs_…` / `pi_…`.",
      }),
    ),
    url: Nullable(
      Type.String({ description: 'The payment page, for checkout links and charges that need the customer.' }),
    ),
    expires_at: nullableTimestamp,
    failure_code: Nullable(
      Type.String({ examples: ['insufficient_funds', 'authentication_required', 'provider_timeout'] }),
    ),
    failure_message: Nullable(Type.String()),
    created_at: timestamp,
    updated_at: timestamp,
  },
  {
    $id: 'PaymentAttempt',
    description: 'One request the service made to a provider to collect an invoice (SPEC §10).',
    examples: [
      {
        id: 'pat_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
        invoice_id: 'inv_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
        provider: 'paystack',
        kind: 'charge',
        reference: 'pat-01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
        status: 'failed',
        amount: 500000,
        currency: 'NGN',
        provider_object_id: null,
        url: null,
        expires_at: null,
        failure_code: 'insufficient_funds',
        failure_message: 'Insufficient Funds',
        created_at: '2026-02-15T10:00:01.000Z',
        updated_at: '2026-02-15T10:00:02.000Z',
      },
    ],
  },
);

export type PaymentAttempt = Static<typeof paymentAttemptSchema>;

/** The API view of an attempt row (amounts as numbers). */
export function toPaymentAttempt(row: PaymentAttemptRow): PaymentAttempt {
  return {
    id: row.id,
    invoice_id: row.invoice_id,
    provider: row.provider,
    kind: row.kind,
    reference: row.reference,
    status: row.status,
    amount: Number(row.amount),
    currency: row.currency,
    provider_object_id: row.provider_object_id,
    url: row.url,
    expires_at: row.expires_at,
    failure_code: row.failure_code,
    failure_message: row.failure_message,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}
