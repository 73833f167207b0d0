// The provider event resource: an inbox row as operators see it, defined once.
// These TypeBox schemas serialize and document GET /api/provider-events[/{id}] and the retry;
// `ProviderEventView` / `ProviderEventDetail` are their static types.
import Type, { type Static } from 'typebox';
import { Nullable, nullableTimestamp, pageOf, StringEnum, timestamp } from '../http/schemas.ts';
import type { InboxStatus } from '../db/tables/provider-events.table.ts';

/** Every inbox status, for the `status` filter and the schema (provider-events.table.ts says what each means). */
export const INBOX_STATUSES = [
  'received',
  'processed',
  'ignored',
  'failed',
  'held',
] as const satisfies readonly InboxStatus[];

/** The fields `sort_by` may name on GET /api/provider-events; the first is the default. */
export const PROVIDER_EVENT_SORT_FIELDS = ['received_at'] as const;

/** Statuses POST /api/provider-events/{id}/retry accepts. */
export const RETRYABLE_STATUSES = ['failed', 'held'] as const satisfies readonly InboxStatus[];

const EVENT_EXAMPLE = {
  id: 'pev_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
  provider: 'stripe',
  type: 'payment_intent.succeeded',
  event_key: 'evt_3QeFDs2eZvKYlo2C0m1FqLxB',
  status: 'processed',
  error: null,
  attempts: 1,
  next_attempt_at: null,
  held_reference: null,
  received_at: '2026-01-15T10:00:00.000Z',
  processed_at: '2026-01-15T10:00:00.012Z',
} as const;

/** A provider event in a list: the inbox row without its payload. */
export const providerEventSchema = Type.Object(
  {
    id: Type.String({ examples: ['pev_01JD3Q7Z8X9Y0A1B2C3D4E5F6G'] }),
    provider: Type.String({ examples: ['stripe'] }),
    type: Type.String({
      description: "The provider's event type as received (`charge.success`, `payment_intent.succeeded`).",
      examples: ['payment_intent.succeeded'],
    }),
    event_key: Type.String({
      description:
        "The provider's key of the event, unique per provider: Stripe's event id (`evt_…`); for Paystack, which has " +
        'no event id, the type and the object id (`charge.success:4099260516`). A redelivery has the same key and is not stored again.',
      examples: ['evt_3QeFDs2eZvKYlo2C0m1FqLxB'],
    }),
    status: StringEnum(INBOX_STATUSES, {
      description:
        '`received`: stored, not processed yet; `processed`: its effects are applied; `ignored`: a type (or a zero ' +
        'amount) that changes nothing; `held`: a refund waiting for its payment (`held_reference`); `failed`: see ' +
        '`error`, retried by the worker at `next_attempt_at`, or never again when that is null.',
    }),
    error: Nullable(Type.String({ description: 'Why the last attempt failed (`failed` only).' })),
    attempts: Type.Integer({ minimum: 0, description: 'Processing attempts so far.' }),
    next_attempt_at: Nullable(
      Type.String({
        format: 'date-time',
        description:
          'When the worker (re)processes the event: the retry time of a `failed` event, the lease of a `received` ' +
          'or claimed one; null when nothing is scheduled.',
      }),
    ),
    held_reference: Nullable(
      Type.String({ description: 'A `held` refund: the provider reference of the payment it waits for.' }),
    ),
    received_at: timestamp,
    processed_at: nullableTimestamp,
  },
  {
    $id: 'ProviderEvent',
    description: 'A verified event POST /api/notify stored in the inbox, without its payload.',
    examples: [EVENT_EXAMPLE],
  },
);

/** A page of provider events (SPEC §2 list envelope). */
export const providerEventListSchema = pageOf('ProviderEventList', providerEventSchema);

/** A provider event as lists show it. */
export type ProviderEventView = Static<typeof providerEventSchema>;

/** One provider event: the list fields, what it is linked to, and its payload. */
export const providerEventDetailSchema = Type.Object(
  {
    ...providerEventSchema.properties,
    payment_id: Nullable(
      Type.String({
        description:
          'The payment this event reports on (a payment, refund or link event), as recorded now — through reference ' +
          "aliases and merges; null when the event names none or it is not recorded. `status` says whether this event's " +
          'own report was applied.',
        examples: ['pay_01JD3Q7Z8X9Y0A1B2C3D4E5F6G'],
      }),
    ),
    refund_ids: Type.Array(Type.String(), {
      description: 'The refunds of `payment_id` this event reports on (refund events), oldest first; empty otherwise.',
    }),
    payload: Type.Unsafe<unknown>({
      description:
        'The body the provider sent, parsed from the stored bytes (any JSON value); null when the stored text is not ' +
        'JSON, and then `payload_text` holds it.',
    }),
    payload_text: Nullable(
      Type.String({ description: 'The stored body as text, only when it is not JSON (otherwise null).' }),
    ),
  },
  {
    $id: 'ProviderEventDetail',
    description: 'One provider event: its inbox fields, the payment and refunds it reports on, and its payload.',
    examples: [
      {
        ...EVENT_EXAMPLE,
        payment_id: 'pay_01JD3Q7Z8X9Y0A1B2C3D4E5F6H',
        refund_ids: [],
        payload: {
          id: 'evt_3QeFDs2eZvKYlo2C0m1FqLxB',
          type: 'payment_intent.succeeded',
          data: { object: { id: 'pi_3QeFDs2eZvKYlo2C0a1b2c3d', amount: 500000, currency: 'ngn' } },
        },
        payload_text: null,
      },
    ],
  },
);

/** A provider event as GET /api/provider-events/{id} and the retry return it. */
export type ProviderEventDetail = Static<typeof providerEventDetailSchema>;
