// /api/events: every event emitted, with the same `data` the webhooks carry (SPEC §3).
import type { Deps } from '../deps.ts';
import { type ListQueryInput, listQuerySchema, parseListParams } from '../http/lists.ts';
import { defineRoute, type Route } from '../http/route.ts';
import { API_KEY_SECURITY, errorResponses, idParams, responseOf } from '../http/schemas.ts';
import { eventListSchema, eventSchema } from '../modules/events/events.schemas.ts';
import * as service from '../modules/events/events.service.ts';
import { TOPICS, type Topic } from '../modules/events/events.topics.ts';

const common = { tags: ['Events'], security: API_KEY_SECURITY };

/** Routes of the events module. */
export function eventRoutes(deps: Deps): Route[] {
  const { db } = deps;
  return [
    defineRoute<{ Querystring: ListQueryInput & { topic?: Topic; delivered?: 'true' | 'false' } }>({
      method: 'GET',
      url: '/api/events',
      schema: {
        ...common,
        operationId: 'listEvents',
        summary: 'List events',
        querystring: listQuerySchema(service.EVENT_SORT_FIELDS, {
          topic: { type: 'string', enum: [...TOPICS] },
          delivered: { type: 'string', enum: ['true', 'false'] },
        }),
        response: { 200: responseOf(eventListSchema, 'A page of events'), ...errorResponses(400, 401, 403) },
      },
      handler: async (request) => {
        const { topic, delivered } = request.query;
        return service.listEvents(db, parseListParams(request.query), {
          topic,
          delivered: delivered === undefined ? undefined : delivered === 'true',
        });
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/api/events/:id',
      schema: {
        ...common,
        operationId: 'getEvent',
        summary: 'Get an event',
        params: idParams,
        response: { 200: responseOf(eventSchema, 'The event'), ...errorResponses(401, 403, 404) },
      },
      handler: async (request) => service.getEvent(db, request.params.id),
    }),
  ];
}
