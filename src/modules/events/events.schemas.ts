// The event resource, defined once: this TypeBox schema serializes and documents the
// routes, and `EventView` is its static type.
import Type, { type Static } from 'typebox';
import { nullableTimestamp, StringEnum, timestamp } from '../../http/schemas.ts';
import { TOPICS } from './topics.ts';

/** An event as the API returns it; `data` is the resource as the API returned it then. */
export const eventSchema = Type.Object({
  id: Type.String({ examples: ['evt_01JD3Q7Z8X9Y0A1B2C3D4E5F6G'] }),
  topic: StringEnum(TOPICS),
  data: Type.Unsafe<unknown>({
    type: 'object',
    additionalProperties: true,
    description: 'The resource as the API returned it.',
  }),
  created_at: timestamp,
  delivered: Type.Boolean({ description: 'True once every webhook delivery of this event succeeded.' }),
  delivered_at: nullableTimestamp,
});

export type EventView = Static<typeof eventSchema>;
