// The meter resource (SPEC §15) and its request bodies, defined once: these TypeBox schemas
// validate, serialize and document the routes; `Meter` and the inputs are their static types.
import Type, { type Static } from 'typebox';
import { LATE_EVENT_POLICIES, METER_AGGREGATIONS } from '../../db/tables/usage.table.ts';
import { Nullable, pageOf, StringEnum, timestamp } from '../../http/schemas.ts';

export const METER_SORT_FIELDS = ['created_at', 'event_name', 'display_name'] as const;
/** Fixed at creation (like a plan's price): a different rule is a new meter. */
export const IMMUTABLE_METER_FIELDS = [
  'event_name',
  'aggregation',
  'value_property',
  'unique_property',
  'late_events',
] as const;

const METER_EXAMPLE = {
  id: 'meter_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
  event_name: 'api_request',
  aggregation: 'sum',
  value_property: 'tokens',
  unique_property: null,
  display_name: 'Tokens',
  late_events: 'bill_next_invoice',
  created_at: '2026-01-15T10:00:00.000Z',
  updated_at: '2026-01-15T10:00:00.000Z',
};

export const meterSchema = Type.Object(
  {
    id: Type.String({ examples: ['meter_01JD3Q7Z8X9Y0A1B2C3D4E5F6G'] }),
    event_name: Type.String({ description: 'The usage events this meter counts (unique among meters).' }),
    aggregation: StringEnum(METER_AGGREGATIONS, {
      description:
        'count: events; sum / max: of `value_property`; last: `value_property` of the latest event (by timestamp, then transaction_id); unique_count: distinct values of `unique_property`.',
    }),
    value_property: Nullable(Type.String({ description: 'The property read as a decimal (sum, max, last).' })),
    unique_property: Nullable(Type.String({ description: 'The property whose distinct values count (unique_count).' })),
    display_name: Type.String(),
    late_events: StringEnum(LATE_EVENT_POLICIES, {
      description:
        'Events timestamped in an already invoiced period: `bill_next_invoice` (an adjustment on the next invoice) or `drop` (stored and listed, never billed).',
    }),
    created_at: timestamp,
    updated_at: timestamp,
  },
  {
    $id: 'Meter',
    description: 'How usage events of one event_name become a value per billing period (SPEC §15).',
    examples: [METER_EXAMPLE],
  },
);

export const meterListSchema = pageOf('MeterList', meterSchema);

/** A meter as the API returns it. */
export type Meter = Static<typeof meterSchema>;

const name = (description: string) => Type.String({ minLength: 1, maxLength: 255, description });

export const createMeterBody = Type.Object(
  {
    event_name: name('The event_name usage events carry; unique among meters.'),
    aggregation: StringEnum(METER_AGGREGATIONS),
    value_property: Type.Optional(name('Required for sum, max and last; refused otherwise.')),
    unique_property: Type.Optional(name('Required for unique_count; refused otherwise.')),
    display_name: Type.String({ minLength: 1, maxLength: 255 }),
    late_events: Type.Optional(StringEnum(LATE_EVENT_POLICIES, { default: 'bill_next_invoice' })),
  },
  {
    additionalProperties: false,
    examples: [{ event_name: 'api_request', aggregation: 'sum', value_property: 'tokens', display_name: 'Tokens' }],
  },
);

const immutableFields = Object.fromEntries(
  IMMUTABLE_METER_FIELDS.map((f) => [f, Type.Optional(Type.Unknown({ description: 'Immutable: refused with 400.' }))]),
);

export const updateMeterBody = Type.Object(
  { display_name: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })), ...immutableFields },
  {
    additionalProperties: false,
    description: 'Only `display_name`: how a meter aggregates never changes once created (create a new meter).',
    examples: [{ display_name: 'API tokens' }],
  },
);

export type CreateMeterInput = Static<typeof createMeterBody>;
/** The changes a client may ask for; the immutable fields never reach the service. */
export interface UpdateMeterInput {
  display_name?: string;
}
