// JSON schemas of the webhook routes (SPEC §3, §6): they validate, serialize and document.
// `url` and `events` get their full check in the service (DNS, topic names), which names
// the field in the 400 the same way the schema does.
import { nullableTimestamp, timestamp } from '../../http/schemas.ts';
import { TOPICS } from '../events/topics.ts';
import { MAX_URL_LENGTH } from './url-safety.ts';

export const ENDPOINT_SORT_FIELDS = ['created_at', 'updated_at', 'url'] as const;
export const DELIVERY_SORT_FIELDS = ['created_at', 'updated_at'] as const;

export const endpointSchema = {
  type: 'object',
  required: ['id', 'url', 'events', 'has_secret', 'status', 'disabled_reason', 'created_at', 'updated_at'],
  properties: {
    id: { type: 'string', examples: ['we_01JD3Q7Z8X9Y0A1B2C3D4E5F6G'] },
    url: { type: 'string', examples: ['https://hooks.example.com/billing'] },
    events: { type: 'array', items: { type: 'string' }, examples: [['payment.succeeded', 'payment.failed']] },
    has_secret: { type: 'boolean', description: 'Whether deliveries are signed. The secret itself is never returned.' },
    status: { type: 'string', enum: ['enabled', 'disabled'] },
    disabled_reason: {
      type: ['string', 'null'],
      enum: ['manual', 'gone', 'failing', null],
      description:
        '`manual` (PATCH), `gone` (the receiver answered 410), `failing` (every attempt failed for 5 days); null while enabled.',
    },
    created_at: timestamp,
    updated_at: timestamp,
  },
} as const;

const url = {
  type: 'string',
  maxLength: MAX_URL_LENGTH,
  description:
    'Absolute https URL without credentials whose host resolves only to public addresses; checked again at every delivery.',
  examples: ['https://hooks.example.com/billing'],
} as const;

const events = {
  type: 'array',
  description: `Non-empty list of distinct topics to receive, or \`["*"]\` for all. Topics: ${TOPICS.map((t) => `\`${t}\``).join(', ')}.`,
  items: { description: 'A topic name, or "*".', examples: ['payment.succeeded'] },
  examples: [['payment.succeeded', 'payment.failed']],
} as const;

const secret = {
  type: 'string',
  minLength: 1,
  maxLength: 256,
  description:
    'Signing secret (write-only). Deliveries then carry X-Signature and the Standard Webhooks headers. Use ≥ 32 random bytes.',
} as const;

export const createEndpointBody = {
  type: 'object',
  required: ['url', 'events'],
  additionalProperties: false,
  properties: { url, events, secret },
} as const;

export const updateEndpointBody = {
  type: 'object',
  additionalProperties: false,
  description: 'Any of the fields. `secret: null` removes the secret; `status: enabled` re-enables a disabled endpoint.',
  properties: {
    url,
    events,
    secret: { ...secret, type: ['string', 'null'] },
    status: { type: 'string', enum: ['enabled', 'disabled'] },
  },
} as const;

export interface CreateEndpointInput {
  url: string;
  events: unknown;
  secret?: string;
}

export interface UpdateEndpointInput {
  url?: string;
  events?: unknown;
  secret?: string | null;
  status?: 'enabled' | 'disabled';
}

export const attemptSchema = {
  type: 'object',
  required: ['number', 'attempted_at', 'status_code', 'duration_ms', 'response_body', 'error'],
  properties: {
    number: { type: 'integer', minimum: 1 },
    attempted_at: timestamp,
    status_code: { type: ['integer', 'null'], description: 'HTTP status, null when no response arrived.' },
    duration_ms: { type: 'integer' },
    response_body: { type: ['string', 'null'], description: 'The first ≤ 1 KiB of the response body.' },
    error: { type: ['string', 'null'], description: 'Why the attempt failed without an acceptable response.' },
  },
} as const;

export const deliverySchema = {
  type: 'object',
  required: [
    'id',
    'endpoint_id',
    'event_id',
    'topic',
    'status',
    'attempt_count',
    'next_attempt_at',
    'last_attempt_at',
    'delivered_at',
    'created_at',
    'updated_at',
    'attempts',
  ],
  properties: {
    id: { type: 'string', examples: ['del_01JD3Q7Z8X9Y0A1B2C3D4E5F6G'] },
    endpoint_id: { type: 'string' },
    event_id: { type: 'string', description: 'Sent as X-Event-Id and webhook-id on every attempt.' },
    topic: { type: 'string', enum: [...TOPICS] },
    status: {
      type: 'string',
      enum: ['pending', 'succeeded', 'failed'],
      description: '`failed`: the retry schedule is used up (or the receiver answered 410).',
    },
    attempt_count: { type: 'integer' },
    next_attempt_at: {
      ...nullableTimestamp,
      description: 'When the next attempt is due; null unless pending, and while the endpoint is disabled.',
    },
    last_attempt_at: nullableTimestamp,
    delivered_at: { ...nullableTimestamp, description: 'First successful attempt.' },
    created_at: timestamp,
    updated_at: timestamp,
    attempts: { type: 'array', items: attemptSchema, description: 'Every attempt, oldest first.' },
  },
} as const;

export const deliveryParams = {
  type: 'object',
  required: ['id', 'delivery_id'],
  properties: { id: { type: 'string', maxLength: 64 }, delivery_id: { type: 'string', maxLength: 64 } },
} as const;
