// Usage (SPEC §15): POST /api/usage-events (ingestion: 202, a result per event), GET
// /api/usage-events (the stored events) and GET /api/customers/{id}/usage (each meter's
// value for the current period or a given range).
import { customerUsage } from '../billing/usage.ts';
import type { Deps } from '../deps.ts';
import { ValidationError } from '../http/errors.ts';
import { type ListQueryInput, listQuerySchema, parseListParams } from '../http/lists.ts';
import { defineRoute, type Route } from '../http/route.ts';
import { API_KEY_SECURITY, errorResponses, idParams, responseOf } from '../http/schemas.ts';
import { ingestUsageEvents } from '../modules/usage/usage.ingest.ts';
import { listUsageEvents } from '../modules/usage/usage.read.ts';
import {
  customerUsageListSchema,
  type IngestUsageInput,
  ingestResponseSchema,
  ingestUsageBody,
  USAGE_EVENT_SORT_FIELDS,
  usageEventListSchema,
} from '../modules/usage/usage.schemas.ts';

const common = { tags: ['Usage'], security: API_KEY_SECURITY };
const text = { type: 'string', minLength: 1, maxLength: 255 } as const;
const instant = { type: 'string', maxLength: 64, description: 'ISO 8601 date-time' } as const;

const listQuery = listQuerySchema(USAGE_EVENT_SORT_FIELDS, {
  customer_id: text,
  event_name: text,
  transaction_id: text,
  from: instant,
  to: instant,
});
// Usage events have no created_at: they sort by their timestamp unless asked otherwise.
const USAGE_EVENT_LIST_QUERY = {
  ...listQuery,
  properties: { ...listQuery.properties, sort_by: { ...listQuery.properties.sort_by, default: 'timestamp' } },
} as const;

/** Routes of usage ingestion and reading. */
export function usageRoutes(deps: Deps): Route[] {
  const { db, clock } = deps;
  return [
    defineRoute<{ Body: IngestUsageInput }>({
      method: 'POST',
      url: '/api/usage-events',
      schema: {
        ...common,
        operationId: 'ingestUsageEvents',
        summary: 'Send usage events',
        description:
          'One event or `{events: [...]}` (≤ 1,000). Answers 202 with one result per event once the accepted ones are committed: `accepted`, `duplicate` (the transaction_id was seen for this customer: never counted twice) or `rejected` with a code; one bad event never refuses the others.',
        body: ingestUsageBody,
        response: {
          202: responseOf(ingestResponseSchema, 'One result per event'),
          ...errorResponses(400, 401, 403, 413, 415),
        },
      },
      handler: async (request, reply) => {
        const { events, ...single } = request.body;
        if (events !== undefined && Object.keys(single).length > 0) {
          throw new ValidationError('send either one event or {events: [...]}, not both', 'events');
        }
        const results = await ingestUsageEvents(db, clock, events ?? [single]);
        const count = (status: string) => results.filter((r) => r.status === status).length;
        return reply.code(202).send({
          data: results,
          accepted: count('accepted'),
          duplicates: count('duplicate'),
          rejected: count('rejected'),
        });
      },
    }),
    defineRoute<{
      Querystring: ListQueryInput & {
        customer_id?: string;
        event_name?: string;
        transaction_id?: string;
        from?: string;
        to?: string;
      };
    }>({
      method: 'GET',
      url: '/api/usage-events',
      schema: {
        ...common,
        operationId: 'listUsageEvents',
        summary: 'List usage events',
        description: '`from` / `to` bound the events’ `timestamp`: from ≤ timestamp < to.',
        querystring: USAGE_EVENT_LIST_QUERY,
        response: { 200: responseOf(usageEventListSchema, 'A page of usage events'), ...errorResponses(400, 401, 403) },
      },
      handler: async (request) => {
        const { customer_id, event_name, transaction_id, from, to } = request.query;
        return listUsageEvents(db, parseListParams(request.query, 'timestamp'), {
          customer_id,
          event_name,
          transaction_id,
          from,
          to,
        });
      },
    }),
    defineRoute<{ Params: { id: string }; Querystring: { meter_id?: string; from?: string; to?: string } }>({
      method: 'GET',
      url: '/api/customers/:id/usage',
      schema: {
        ...common,
        operationId: 'getCustomerUsage',
        summary: "A customer's usage per meter",
        description:
          "Each meter's value (or only `meter_id`'s) over [from, to); by default the current period of the customer's live subscription, else the calendar month of the customer's clock.",
        params: idParams,
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: { meter_id: { type: 'string', maxLength: 64 }, from: instant, to: instant },
        },
        response: {
          200: responseOf(customerUsageListSchema, 'One value per meter'),
          ...errorResponses(400, 401, 403, 404),
        },
      },
      handler: async (request) => customerUsage(db, clock, request.params.id, request.query),
    }),
  ];
}
