// /api/plans: create, list, get, patch (name/active/metadata) (SPEC §3).
import type { Deps } from '../deps.ts';
import { ValidationError } from '../http/errors.ts';
import { type ListQueryInput, listQuerySchema, parseListParams } from '../http/lists.ts';
import { defineRoute, type Route } from '../http/route.ts';
import { API_KEY_SECURITY, errorResponses, idParams, responseOf } from '../http/schemas.ts';
import {
  createPlanBody,
  IMMUTABLE_PLAN_FIELDS,
  PLAN_SORT_FIELDS,
  planListSchema,
  planSchema,
  type UpdatePlanInput,
  updatePlanBody,
} from '../modules/plans/plans.schemas.ts';
import * as service from '../modules/plans/plans.service.ts';

const common = { tags: ['Plans'], security: API_KEY_SECURITY };

/** Routes of the plans module. */
export function planRoutes(deps: Deps): Route[] {
  const { db, clock } = deps;
  return [
    defineRoute({
      method: 'POST',
      url: '/api/plans',
      schema: {
        ...common,
        operationId: 'createPlan',
        summary: 'Create a plan',
        body: createPlanBody,
        response: { 201: responseOf(planSchema, 'The new plan'), ...errorResponses(400, 401, 403, 413, 415) },
      },
      handler: async (request, reply) => reply.code(201).send(await service.createPlan(db, clock, request.body)),
    }),
    defineRoute<{ Querystring: ListQueryInput }>({
      method: 'GET',
      url: '/api/plans',
      schema: {
        ...common,
        operationId: 'listPlans',
        summary: 'List plans',
        querystring: listQuerySchema(PLAN_SORT_FIELDS),
        response: { 200: responseOf(planListSchema, 'A page of plans'), ...errorResponses(400, 401, 403) },
      },
      handler: async (request) => service.listPlans(db, parseListParams(request.query)),
    }),
    defineRoute({
      method: 'GET',
      url: '/api/plans/:id',
      schema: {
        ...common,
        operationId: 'getPlan',
        summary: 'Get a plan',
        params: idParams,
        response: { 200: responseOf(planSchema, 'The plan'), ...errorResponses(401, 403, 404) },
      },
      handler: async (request) => service.getPlan(db, request.params.id),
    }),
    defineRoute<{ Params: { id: string }; Body: UpdatePlanInput }>({
      method: 'PATCH',
      url: '/api/plans/:id',
      schema: {
        ...common,
        operationId: 'updatePlan',
        summary: 'Update a plan',
        description: 'Only `name`, `active` (false archives) and `metadata`. Prices are immutable.',
        params: idParams,
        body: updatePlanBody,
        response: {
          200: responseOf(planSchema, 'The plan as updated'),
          ...errorResponses(400, 401, 403, 404, 413, 415),
        },
      },
      handler: async (request) => {
        const immutable = IMMUTABLE_PLAN_FIELDS.find((field) => field in request.body);
        if (immutable) {
          throw new ValidationError(
            `${immutable} cannot be changed after a plan is created; create a new plan instead`,
            immutable,
          );
        }
        return service.updatePlan(db, clock, request.params.id, request.body);
      },
    }),
  ];
}
