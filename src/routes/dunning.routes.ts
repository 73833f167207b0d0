// /api/dunning: the failed-payment follow-up lists (SPEC §3; seed "dunning lists").
// Each answers the `{data, total}` shape with the usual page/limit/sort rules.
import type { Deps } from '../deps.ts';
import { ValidationError } from '../http/errors.ts';
import { type ListQueryInput, listQuerySchema, parseListParams } from '../http/lists.ts';
import { defineRoute, type Route } from '../http/route.ts';
import { API_KEY_SECURITY, errorResponses, idParams, responseOf } from '../http/schemas.ts';
import { parseDuration } from '../shared/durations.ts';
import { DUNNING_CASE_STATUSES } from '../db/tables/dunning.table.ts';
import {
  caseListSchema,
  caseWithStepsSchema,
  pastDueListSchema,
  upcomingListSchema,
} from '../modules/dunning/dunning.schemas.ts';
import * as service from '../modules/dunning/dunning.service.ts';

const common = { tags: ['Dunning'], security: API_KEY_SECURITY };

/** The longest `within` the upcoming list accepts. */
const MAX_WITHIN_MS = 366 * 86_400_000;

/** Routes of the dunning module. */
export function dunningRoutes(deps: Deps): Route[] {
  const { db, clock, config } = deps;
  return [
    defineRoute<{ Querystring: ListQueryInput & { status?: service.CaseStatusFilter } }>({
      method: 'GET',
      url: '/api/dunning/cases',
      schema: {
        ...common,
        operationId: 'listDunningCases',
        summary: 'List dunning cases',
        description: 'Cases in one `status` (default `open`; `all` for every case).',
        querystring: listQuerySchema(service.CASE_SORT_FIELDS, {
          status: { type: 'string', enum: [...DUNNING_CASE_STATUSES, 'all'], default: 'open' },
        }),
        response: { 200: responseOf(caseListSchema, 'A page of dunning cases'), ...errorResponses(400, 401, 403) },
      },
      handler: async (request) => service.listCases(db, parseListParams(request.query), request.query.status),
    }),
    defineRoute({
      method: 'GET',
      url: '/api/dunning/cases/:id',
      schema: {
        ...common,
        operationId: 'getDunningCase',
        summary: 'Get a dunning case with its steps',
        params: idParams,
        response: { 200: responseOf(caseWithStepsSchema, 'The case and its steps'), ...errorResponses(401, 403, 404) },
      },
      handler: async (request) => service.getCase(db, request.params.id),
    }),
    defineRoute<{ Querystring: ListQueryInput }>({
      method: 'GET',
      url: '/api/dunning/past-due',
      schema: {
        ...common,
        operationId: 'listPastDueSubscriptions',
        summary: 'List past-due and unpaid subscriptions',
        description:
          'Subscriptions in `past_due` or `unpaid` with the customer email, the amount due, the open case and days overdue. Sorted by the subscription field.',
        querystring: listQuerySchema(service.PAST_DUE_SORT_FIELDS),
        response: {
          200: responseOf(pastDueListSchema, 'A page of past-due subscriptions'),
          ...errorResponses(400, 401, 403),
        },
      },
      handler: async (request) => service.listPastDue(db, clock, parseListParams(request.query)),
    }),
    defineRoute<{ Querystring: ListQueryInput & { within?: string } }>({
      method: 'GET',
      url: '/api/dunning/upcoming',
      schema: {
        ...common,
        operationId: 'listUpcomingDunningActions',
        summary: 'List dunning cases with an action coming up',
        description:
          'Open cases whose next reminder or final action is due within `within` (a duration such as `12h` or `7d`, default `7d`, at most `366d`), overdue ones included.',
        querystring: listQuerySchema(service.CASE_SORT_FIELDS, {
          within: { type: 'string', default: '7d', maxLength: 16 },
        }),
        response: {
          200: responseOf(upcomingListSchema, 'A page of open cases with their next action'),
          ...errorResponses(400, 401, 403),
        },
      },
      handler: async (request) => {
        const text = request.query.within ?? '7d';
        const withinMs = parseDuration(text);
        if (withinMs === undefined || withinMs > MAX_WITHIN_MS) {
          throw new ValidationError(
            `within must be a duration such as 12h or 7d, at most 366d (got "${text}")`,
            'within',
          );
        }
        return service.listUpcoming(db, clock, config, parseListParams(request.query), withinMs);
      },
    }),
  ];
}
