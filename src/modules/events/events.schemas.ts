// The event resource, defined once: this TypeBox schema serializes and documents the
// routes, and `EventView` is its static type.
import Type, { type Static } from 'typebox';
import { nullableTimestamp, pageOf, StringEnum, timestamp } from '../../http/schemas.ts';
import { TOPICS } from './events.topics.ts';

/** An event as the API returns it; `data` is the resource as the API returned it then. */
export const eventSchema = Type.Object(
  {
    id: Type.String({ examples: ['evt_01JD3Q7Z8X9Y0A1B2C3D4E5F6G'] }),
    topic: StringEnum(TOPICS),
    data: Type.Unsafe<unknown>({
      type: 'object',
      additionalProperties: true,
      description:
        "The resource as the API returned it: the topic's schema in this document's `webhooks` section (e.g. `Customer` for `customer.created`).",
    }),
    created_at: timestamp,
    actor: Type.Union(
      [
        Type.Object(
          {
            type: Type.Literal('console_session'),
            id: Type.String({ examples: ['cs_01JD3Q7Z8X9Y0A1B2C3D4E5F6G'] }),
          },
          { additionalProperties: false },
        ),
        Type.Null(),
      ],
      {
        description:
          'Who caused the event through the operator console (SPEC §16): its session. Null for events caused through the API (its key), by providers or by the worker.',
      },
    ),
    delivered: Type.Boolean({ description: 'True once every webhook delivery of this event succeeded.' }),
    delivered_at: nullableTimestamp,
  },
  {
    $id: 'Event',
    description: 'Something that happened, as webhooks deliver it (`topic`, `data`), with its delivery state.',
    examples: [
      {
        id: 'evt_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
        topic: 'customer.created',
        data: {
          id: 'cus_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
          email: 'ada@example.com',
          name: 'Ada Lovelace',
          phone: '+2348012345678',
          metadata: { crm_id: '4711' },
          created_at: '2026-01-15T10:00:00.000Z',
          updated_at: '2026-01-15T10:00:00.000Z',
        },
        created_at: '2026-01-15T10:00:00.000Z',
        actor: null,
        delivered: true,
        delivered_at: '2026-01-15T10:00:00.850Z',
      },
    ],
  },
);

export type EventView = Static<typeof eventSchema>;

export const eventListSchema = pageOf('EventList', eventSchema);
