// Usage events (SPEC §15): the ingestion request and its per-event results, a stored event as
// lists show it, and a customer's usage per meter. Defined once: these TypeBox schemas
// validate, serialize and document the routes.
import Type, { type Static } from 'typebox';
import { pageOf, ref, StringEnum, timestamp } from '../../http/schemas.ts';
import { MAX_BATCH_EVENTS, USAGE_EVENT_ERROR_CODES } from './usage.ingest.ts';

export const USAGE_EVENT_SORT_FIELDS = ['timestamp', 'received_at'] as const;

const loose = (description: string) => Type.Optional(Type.Unknown({ description }));

/**
 * The request: one event (its fields at the top level) or `{events: [...]}`. The events'
 * fields are checked one by one by the service, so one bad event never refuses the others.
 */
export const ingestUsageBody = Type.Object(
  {
    events: Type.Optional(
      Type.Array(Type.Unknown({ description: 'An event: the fields below.' }), {
        minItems: 1,
        maxItems: MAX_BATCH_EVENTS,
        description: `Up to ${MAX_BATCH_EVENTS} events, each with the fields below.`,
      }),
    ),
    transaction_id: loose('Your key for the event, 1–255 characters: unique per customer; a repeat is a duplicate.'),
    customer_id: loose("The customer's `cus_…` id or its `external_id`."),
    event_name: loose('The event_name of a meter; an event no meter counts is rejected (`meter_not_found`).'),
    timestamp: loose(
      "ISO 8601: at most 35 days before and 5 minutes after the customer's clock (a test clock's time for its customers).",
    ),
    properties: loose(
      "A JSON object (≤ 8,192 characters of JSON): the meter's `value_property` (a decimal: number or string) or `unique_property`.",
    ),
  },
  {
    additionalProperties: false,
    description: 'One event, or `{events: [...]}` for up to 1,000 (one multi-row write).',
    examples: [
      {
        events: [
          {
            transaction_id: 'req_8812',
            customer_id: 'acct-4711',
            event_name: 'api_request',
            timestamp: '2026-01-15T09:59:58Z',
            properties: { tokens: 1200 },
          },
        ],
      },
    ],
  },
);

export type IngestUsageInput = Static<typeof ingestUsageBody>;

export const ingestResultSchema = Type.Object(
  {
    index: Type.Integer({ description: "The event's position in the request (0 for a single event)." }),
    transaction_id: Type.Union([Type.String(), Type.Null()]),
    status: StringEnum(['accepted', 'duplicate', 'rejected'] as const, {
      description:
        '`accepted`: stored (durable: committed before this answer); `duplicate`: this customer sent this transaction_id before (or earlier in the request), acknowledged, never counted twice; `rejected`: see `error`.',
    }),
    id: Type.Optional(Type.String({ description: 'The stored event (`uev_…`), when accepted.' })),
    error: Type.Optional(
      Type.Object({
        code: StringEnum(USAGE_EVENT_ERROR_CODES),
        message: Type.String(),
      }),
    ),
  },
  {
    $id: 'UsageIngestResult',
    description: 'What became of one event of an ingestion request.',
    examples: [{ index: 0, transaction_id: 'req_8f14e45f', status: 'accepted', id: 'uev_01JD3Q7Z8X9Y0A1B2C3D4E5F6G' }],
  },
);

export const ingestResponseSchema = Type.Object(
  {
    data: Type.Array(ref(ingestResultSchema)),
    accepted: Type.Integer(),
    duplicates: Type.Integer(),
    rejected: Type.Integer(),
  },
  {
    $id: 'UsageIngestResponse',
    description: 'One result per event, in request order, and their counts.',
    examples: [
      {
        data: [
          { index: 0, transaction_id: 'req_8f14e45f', status: 'accepted', id: 'uev_01JD3Q7Z8X9Y0A1B2C3D4E5F6G' },
          { index: 1, transaction_id: 'req_8f14e45f', status: 'duplicate' },
          {
            index: 2,
            transaction_id: 'req_c9f0f895',
            status: 'rejected',
            error: { code: 'meter_not_found', message: 'no meter counts events named "api_cals"' },
          },
        ],
        accepted: 1,
        duplicates: 1,
        rejected: 1,
      },
    ],
  },
);

export const usageEventSchema = Type.Object(
  {
    id: Type.String({ examples: ['uev_01JD3Q7Z8X9Y0A1B2C3D4E5F6G'] }),
    customer_id: Type.String(),
    meter_id: Type.String(),
    event_name: Type.String(),
    transaction_id: Type.String(),
    timestamp,
    received_at: Type.String({
      format: 'date-time',
      description:
        "When it was accepted, by the customer's clock: an event whose timestamp lies in a period invoiced before it arrived is late (SPEC §15).",
    }),
    properties: Type.Record(Type.String(), Type.Unknown()),
  },
  {
    $id: 'UsageEvent',
    description: 'A stored usage event (SPEC §15).',
    examples: [
      {
        id: 'uev_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
        customer_id: 'cus_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
        meter_id: 'meter_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
        event_name: 'api_call',
        transaction_id: 'req_8f14e45f',
        timestamp: '2026-01-15T09:59:58.000Z',
        received_at: '2026-01-15T10:00:00.000Z',
        properties: { endpoint: '/v1/search' },
      },
    ],
  },
);

export const usageEventListSchema = pageOf('UsageEventList', usageEventSchema);

export type UsageEvent = Static<typeof usageEventSchema>;

export const customerUsageSchema = Type.Object(
  {
    meter_id: Type.String(),
    value: Type.String({
      description:
        'The aggregated value over [period_start, period_end): exact decimal text ("12.5"); "0" without events.',
      examples: ['1200'],
    }),
    period_start: timestamp,
    period_end: timestamp,
  },
  {
    $id: 'CustomerUsage',
    description: "A meter's value for one customer over a period (SPEC §15).",
    examples: [
      {
        meter_id: 'meter_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
        value: '12345',
        period_start: '2026-01-01T00:00:00.000Z',
        period_end: '2026-02-01T00:00:00.000Z',
      },
    ],
  },
);

export const customerUsageListSchema = Type.Object(
  { data: Type.Array(ref(customerUsageSchema)) },
  {
    $id: 'CustomerUsageList',
    description: 'One value per meter (or the one meter asked for).',
    examples: [
      {
        data: [
          {
            meter_id: 'meter_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
            value: '12345',
            period_start: '2026-01-01T00:00:00.000Z',
            period_end: '2026-02-01T00:00:00.000Z',
          },
        ],
      },
    ],
  },
);

export type CustomerUsage = Static<typeof customerUsageSchema>;
