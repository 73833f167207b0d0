// The webhook resources (endpoints, deliveries and their attempts) and request bodies,
// defined once (SPEC §3, §6): these TypeBox schemas validate, serialize and document the
// routes, and the API types are their static types. `url` and `events` get their full check
// in the service (DNS, topic names), which names the field in the 400 the same way the
// schema does.
import Type, { type Static } from 'typebox';
import { Nullable, nullableTimestamp, pageOf, ref, StringEnum, timestamp } from '../../http/schemas.ts';
import { TOPICS } from '../events/events.topics.ts';
import { MAX_URL_LENGTH } from './webhooks.url-safety.ts';
import {
  DELIVERY_STATUSES,
  DISABLED_REASONS,
  type DisabledReason,
  ENDPOINT_STATUSES,
} from '../../db/tables/webhooks.table.ts';

export const ENDPOINT_SORT_FIELDS = ['created_at', 'updated_at', 'url'] as const;
export const DELIVERY_SORT_FIELDS = ['created_at', 'updated_at'] as const;

export const endpointSchema = Type.Object(
  {
    id: Type.String({ examples: ['we_01JD3Q7Z8X9Y0A1B2C3D4E5F6G'] }),
    url: Type.String({ examples: ['https://hooks.example.com/billing'] }),
    events: Type.Array(Type.String(), { examples: [['payment.succeeded', 'payment.failed']] }),
    has_secret: Type.Boolean({ description: 'Whether deliveries are signed. The secret itself is never returned.' }),
    secret: Type.Optional(
      Type.String({
        description:
          'Only in the response of the request that generated it (`"secret": "generate"`): the new `whsec_` secret, shown once.',
        examples: ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw1N5oFQ5yFbk='],
      }),
    ),
    status: StringEnum(ENDPOINT_STATUSES),
    disabled_reason: Type.Unsafe<DisabledReason | null>({
      type: ['string', 'null'],
      enum: [...DISABLED_REASONS, null],
      description:
        '`manual` (PATCH), `gone` (the receiver answered 410), `failing` (every attempt failed for 5 days); null while enabled.',
    }),
    created_at: timestamp,
    updated_at: timestamp,
  },
  {
    $id: 'WebhookEndpoint',
    description: 'Where the service POSTs the events of the topics it subscribes to.',
    examples: [
      {
        id: 'we_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
        url: 'https://hooks.example.com/billing',
        events: ['payment.succeeded', 'payment.failed'],
        has_secret: true,
        status: 'enabled',
        disabled_reason: null,
        created_at: '2026-01-15T10:00:00.000Z',
        updated_at: '2026-01-15T10:00:00.000Z',
      },
    ],
  },
);

export const endpointListSchema = pageOf('WebhookEndpointList', endpointSchema);

/** A webhook endpoint as the API returns it: `has_secret`; `secret` only right after generating it. */
export type WebhookEndpoint = Static<typeof endpointSchema>;

const url = Type.String({
  maxLength: MAX_URL_LENGTH,
  description:
    'Absolute https URL without credentials whose host resolves only to public addresses; checked again at every delivery.',
  examples: ['https://hooks.example.com/billing'],
});

const events = Type.Array(Type.Unknown({ description: 'A topic name, or "*".', examples: ['payment.succeeded'] }), {
  description: `Non-empty list of distinct topics to receive, or \`["*"]\` for all. Topics: ${TOPICS.map((t) => `\`${t}\``).join(', ')}.`,
  examples: [['payment.succeeded', 'payment.failed']],
});

const secret = Type.String({
  minLength: 1,
  maxLength: 256,
  description:
    'Signing secret (write-only). Deliveries then carry X-Signature and the Standard Webhooks headers. ' +
    'Surrounding whitespace is removed. `"generate"` (any letter case) makes a Standard Webhooks secret (`whsec_` + base64 of 32 random bytes), returned once in this response. ' +
    'A secret starting with `whsec_` (any letter case) must be lower-case `whsec_` + base64 of 24–64 bytes; any other string is used as is (≥ 32 random bytes).',
});

export const createEndpointBody = Type.Object(
  { url, events, secret: Type.Optional(secret) },
  {
    additionalProperties: false,
    examples: [
      {
        url: 'https://hooks.example.com/billing',
        events: ['payment.succeeded', 'payment.failed'],
        secret: '3q2+7w8fN1c5Qm9ZsVt4XkLpY0aBcDeFgHiJkLmNoPq=',
      },
    ],
  },
);

export const updateEndpointBody = Type.Object(
  {
    url: Type.Optional(url),
    events: Type.Optional(events),
    secret: Type.Optional(Nullable(secret)),
    status: Type.Optional(StringEnum(ENDPOINT_STATUSES)),
  },
  {
    additionalProperties: false,
    description:
      'Any of the fields. `secret: null` removes the secret; `status: enabled` re-enables a disabled endpoint.',
    examples: [{ status: 'enabled' }],
  },
);

export type CreateEndpointInput = Static<typeof createEndpointBody>;
export type UpdateEndpointInput = Static<typeof updateEndpointBody>;

const ATTEMPT_EXAMPLE = {
  number: 1,
  attempted_at: '2026-01-29T10:00:05.000Z',
  status_code: 200,
  duration_ms: 84,
  response_body: '{"ok":true}',
  error: null,
} as const;

export const attemptSchema = Type.Object(
  {
    number: Type.Integer({ minimum: 1 }),
    attempted_at: timestamp,
    status_code: Nullable(Type.Integer({ description: 'HTTP status, null when no response arrived.' })),
    duration_ms: Type.Integer(),
    response_body: Nullable(Type.String({ description: 'The first ≤ 1 KiB of the response body.' })),
    error: Nullable(Type.String({ description: 'Why the attempt failed without an acceptable response.' })),
  },
  {
    $id: 'WebhookDeliveryAttempt',
    description: 'One POST of a delivery and what the receiver answered.',
    examples: [ATTEMPT_EXAMPLE],
  },
);

export type DeliveryAttempt = Static<typeof attemptSchema>;

export const deliverySchema = Type.Object(
  {
    id: Type.String({ examples: ['del_01JD3Q7Z8X9Y0A1B2C3D4E5F6G'] }),
    endpoint_id: Type.String(),
    event_id: Type.String({ description: 'Sent as X-Event-Id and webhook-id on every attempt.' }),
    topic: StringEnum(TOPICS),
    status: StringEnum(DELIVERY_STATUSES, {
      description: '`failed`: the retry schedule is used up (or the receiver answered 410).',
    }),
    attempt_count: Type.Integer(),
    next_attempt_at: Type.Unsafe<string | null>({
      ...nullableTimestamp,
      description: 'When the next attempt is due; null unless pending, and while the endpoint is disabled.',
    }),
    last_attempt_at: nullableTimestamp,
    delivered_at: Type.Unsafe<string | null>({ ...nullableTimestamp, description: 'First successful attempt.' }),
    created_at: timestamp,
    updated_at: timestamp,
    attempts: Type.Array(ref(attemptSchema), { description: 'Every attempt, oldest first.' }),
  },
  {
    $id: 'WebhookDelivery',
    description: 'One event sent to one endpoint, retried on the schedule until it succeeds or fails for good.',
    examples: [
      {
        id: 'del_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
        endpoint_id: 'we_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
        event_id: 'evt_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
        topic: 'payment.succeeded',
        status: 'succeeded',
        attempt_count: 1,
        next_attempt_at: null,
        last_attempt_at: '2026-01-29T10:00:05.000Z',
        delivered_at: '2026-01-29T10:00:05.084Z',
        created_at: '2026-01-29T10:00:04.120Z',
        updated_at: '2026-01-29T10:00:05.084Z',
        attempts: [ATTEMPT_EXAMPLE],
      },
    ],
  },
);

/** A delivery as the API returns it, with its attempts oldest first. */
export type Delivery = Static<typeof deliverySchema>;

export const deliveryListSchema = pageOf('WebhookDeliveryList', deliverySchema);

export const deliveryParams = Type.Object({
  id: Type.String({ maxLength: 64 }),
  delivery_id: Type.String({ maxLength: 64 }),
});
