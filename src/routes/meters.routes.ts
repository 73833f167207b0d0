// /api/meters: create, list, get, patch (display_name only) (SPEC §15).
import type { Deps } from '../deps.ts';
import { ValidationError } from '../http/errors.ts';
import { type ListQueryInput, listQuerySchema, parseListParams } from '../http/lists.ts';
import { defineRoute, type Route } from '../http/route.ts';
import { API_KEY_SECURITY, errorResponses, idParams, responseOf } from '../http/schemas.ts';
import {
  createMeterBody,
  IMMUTABLE_METER_FIELDS,
  METER_SORT_FIELDS,
  meterListSchema,
  meterSchema,
  type UpdateMeterInput,
  updateMeterBody,
} from '../modules/meters/meters.schemas.ts';
import * as service from '../modules/meters/meters.service.ts';

const common = { tags: ['Usage'], security: API_KEY_SECURITY };

/** Routes of the meters module. */
export function meterRoutes(deps: Deps): Route[] {
  const { db, clock } = deps;
  return [
    defineRoute({
      method: 'POST',
      url: '/api/meters',
      schema: {
        ...common,
        operationId: 'createMeter',
        summary: 'Create a meter',
        description:
          'How usage events of one `event_name` become a value per period. Everything but `display_name` is fixed once created.',
        body: createMeterBody,
        response: { 201: responseOf(meterSchema, 'The new meter'), ...errorResponses(400, 401, 403, 409, 413, 415) },
      },
      handler: async (request, reply) => reply.code(201).send(await service.createMeter(db, clock, request.body)),
    }),
    defineRoute<{ Querystring: ListQueryInput & { event_name?: string } }>({
      method: 'GET',
      url: '/api/meters',
      schema: {
        ...common,
        operationId: 'listMeters',
        summary: 'List meters',
        querystring: listQuerySchema(METER_SORT_FIELDS, { event_name: { type: 'string', maxLength: 255 } }),
        response: { 200: responseOf(meterListSchema, 'A page of meters'), ...errorResponses(400, 401, 403) },
      },
      handler: async (request) =>
        service.listMeters(db, parseListParams(request.query), { event_name: request.query.event_name }),
    }),
    defineRoute({
      method: 'GET',
      url: '/api/meters/:id',
      schema: {
        ...common,
        operationId: 'getMeter',
        summary: 'Get a meter',
        params: idParams,
        response: { 200: responseOf(meterSchema, 'The meter'), ...errorResponses(401, 403, 404) },
      },
      handler: async (request) => service.getMeter(db, request.params.id),
    }),
    defineRoute<{ Params: { id: string }; Body: UpdateMeterInput }>({
      method: 'PATCH',
      url: '/api/meters/:id',
      schema: {
        ...common,
        operationId: 'updateMeter',
        summary: 'Rename a meter',
        description: 'Only `display_name`; how the meter aggregates never changes (create a new meter).',
        params: idParams,
        body: updateMeterBody,
        response: {
          200: responseOf(meterSchema, 'The meter as updated'),
          ...errorResponses(400, 401, 403, 404, 413, 415),
        },
      },
      handler: async (request) => {
        const immutable = IMMUTABLE_METER_FIELDS.find((field) => field in request.body);
        if (immutable) {
          throw new ValidationError(
            `${immutable} cannot be changed after a meter is created; create a new meter instead`,
            immutable,
          );
        }
        return service.updateMeter(db, clock, request.params.id, request.body);
      },
    }),
  ];
}
