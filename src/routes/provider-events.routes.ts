// /api/provider-events: the inbox of POST /api/notify for operators — list it,
// read one event with its payload and the payment/refunds it reports on, and retry a failed
// or held one now. Reads: inbox/inbox.read.ts; the retry: inbox/inbox.retry.ts.
import type { Deps } from '../deps.ts';
import { type ListQueryInput, listQuerySchema, parseListParams } from '../http/lists.ts';
import { defineRoute, type Route } from '../http/route.ts';
import { API_KEY_SECURITY, errorResponses, idParams, responseOf } from '../http/schemas.ts';
import type { InboxStatus } from '../db/tables/provider-events.table.ts';
import {
  INBOX_STATUSES,
  PROVIDER_EVENT_SORT_FIELDS,
  providerEventDetailSchema,
  providerEventListSchema,
} from '../inbox/inbox.schemas.ts';
import * as read from '../inbox/inbox.read.ts';
import { retryProviderEvent } from '../inbox/inbox.retry.ts';
import { PROVIDER_NAMES } from '../shared/provider-names.ts';

const common = { tags: ['Provider events'], security: API_KEY_SECURITY };
// No NUL: PostgreSQL rejects it in text parameters (a 500), SQLite does not; bad input is a 4xx.
const textFilter = (description: string) =>
  ({ type: 'string', maxLength: 255, pattern: '^[^\\u0000]*$', description }) as const;

const DEFAULT_SORT = PROVIDER_EVENT_SORT_FIELDS[0];

/** The list's query string: the list parameters (sorted by `received_at`, not `created_at`) and the filters. */
function listQuery() {
  const schema = listQuerySchema(PROVIDER_EVENT_SORT_FIELDS, {
    provider: { type: 'string', enum: [...PROVIDER_NAMES] },
    status: { type: 'string', enum: [...INBOX_STATUSES] },
    type: textFilter("The provider's event type, exactly (`charge.success`)."),
    event_key: textFilter("The provider's event key, exactly: a Stripe event id (`evt_…`), a Paystack `type:id`."),
  });
  return {
    ...schema,
    properties: { ...schema.properties, sort_by: { ...schema.properties.sort_by, default: DEFAULT_SORT } },
  };
}

type ListQuery = ListQueryInput & {
  provider?: string;
  status?: InboxStatus;
  type?: string;
  event_key?: string;
};

/** Routes of the operator's view of the provider-event inbox. */
export function providerEventRoutes(deps: Deps): Route[] {
  const { db } = deps;
  return [
    defineRoute<{ Querystring: ListQuery }>({
      method: 'GET',
      url: '/api/provider-events',
      schema: {
        ...common,
        operationId: 'listProviderEvents',
        summary: 'List provider events',
        description:
          'Every verified event POST /api/notify stored, newest first. Filter by `provider`, `status`, `type` or ' +
          '`event_key` ("did Stripe\'s evt_… reach us?"). Items carry no payload: get the event for it and its links.',
        querystring: listQuery(),
        response: {
          200: responseOf(providerEventListSchema, 'A page of provider events'),
          ...errorResponses(400, 401, 403),
        },
      },
      handler: async (request) => {
        const { provider, status, type, event_key } = request.query;
        return read.listProviderEvents(db, parseListParams(request.query, DEFAULT_SORT), {
          provider,
          status,
          type,
          event_key,
        });
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/api/provider-events/:id',
      schema: {
        ...common,
        operationId: 'getProviderEvent',
        summary: 'Get a provider event',
        description: 'The event with its payload as the provider sent it and the payment and refunds it reports on.',
        params: idParams,
        response: {
          200: responseOf(providerEventDetailSchema, 'The provider event'),
          ...errorResponses(401, 403, 404),
        },
      },
      handler: async (request) => read.getProviderEvent(db, request.params.id),
    }),
    defineRoute({
      method: 'POST',
      url: '/api/provider-events/:id/retry',
      schema: {
        ...common,
        operationId: 'retryProviderEvent',
        summary: 'Retry a failed or held provider event',
        description:
          'Processes a `failed` or `held` event again now, as the worker would, and returns it after the attempt ' +
          '(`processed`, still `held`, or `failed` with the new `error`). Other statuses are 409 `conflict`.',
        params: idParams,
        response: {
          200: responseOf(providerEventDetailSchema, 'The provider event after the attempt'),
          ...errorResponses(401, 403, 404, 409),
        },
      },
      handler: async (request) => retryProviderEvent(deps, request.params.id, request.log),
    }),
  ];
}
