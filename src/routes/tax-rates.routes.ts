// /api/tax-rates: create, list, get, patch (display_name/active/metadata) (SPEC §14).
import type { Deps } from '../deps.ts';
import { ValidationError } from '../http/errors.ts';
import { type ListQueryInput, listQuerySchema, parseListParams } from '../http/lists.ts';
import { defineRoute, type Route } from '../http/route.ts';
import { API_KEY_SECURITY, errorResponses, idParams, responseOf } from '../http/schemas.ts';
import {
  createTaxRateBody,
  IMMUTABLE_TAX_RATE_FIELDS,
  TAX_RATE_SORT_FIELDS,
  taxRateListSchema,
  taxRateSchema,
  type UpdateTaxRateInput,
  updateTaxRateBody,
} from '../modules/tax-rates/tax-rates.schemas.ts';
import * as service from '../modules/tax-rates/tax-rates.service.ts';

const common = { tags: ['Tax rates'], security: API_KEY_SECURITY };
const flag = { type: 'string', enum: ['true', 'false'] } as const;

/** Routes of the tax rates module. */
export function taxRateRoutes(deps: Deps): Route[] {
  const { db, clock } = deps;
  return [
    defineRoute({
      method: 'POST',
      url: '/api/tax-rates',
      schema: {
        ...common,
        operationId: 'createTaxRate',
        summary: 'Create a tax rate',
        description: '`percentage` is exact to 4 decimals; it and `inclusive` never change (create a new rate).',
        body: createTaxRateBody,
        response: { 201: responseOf(taxRateSchema, 'The new tax rate'), ...errorResponses(400, 401, 403, 413, 415) },
      },
      handler: async (request, reply) => reply.code(201).send(await service.createTaxRate(db, clock, request.body)),
    }),
    defineRoute<{ Querystring: ListQueryInput & { active?: 'true' | 'false'; inclusive?: 'true' | 'false' } }>({
      method: 'GET',
      url: '/api/tax-rates',
      schema: {
        ...common,
        operationId: 'listTaxRates',
        summary: 'List tax rates',
        querystring: listQuerySchema(TAX_RATE_SORT_FIELDS, { active: flag, inclusive: flag }),
        response: { 200: responseOf(taxRateListSchema, 'A page of tax rates'), ...errorResponses(400, 401, 403) },
      },
      handler: async (request) => {
        const { active, inclusive } = request.query;
        const asBoolean = (value: 'true' | 'false' | undefined) => (value === undefined ? undefined : value === 'true');
        return service.listTaxRates(db, parseListParams(request.query), {
          active: asBoolean(active),
          inclusive: asBoolean(inclusive),
        });
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/api/tax-rates/:id',
      schema: {
        ...common,
        operationId: 'getTaxRate',
        summary: 'Get a tax rate',
        params: idParams,
        response: { 200: responseOf(taxRateSchema, 'The tax rate'), ...errorResponses(401, 403, 404) },
      },
      handler: async (request) => service.getTaxRate(db, request.params.id),
    }),
    defineRoute<{ Params: { id: string }; Body: UpdateTaxRateInput }>({
      method: 'PATCH',
      url: '/api/tax-rates/:id',
      schema: {
        ...common,
        operationId: 'updateTaxRate',
        summary: 'Update a tax rate',
        description:
          'Only `display_name`, `active` (false archives: attached nowhere new, still applied where attached) and `metadata`.',
        params: idParams,
        body: updateTaxRateBody,
        response: {
          200: responseOf(taxRateSchema, 'The tax rate as updated'),
          ...errorResponses(400, 401, 403, 404, 413, 415),
        },
      },
      handler: async (request) => {
        const immutable = IMMUTABLE_TAX_RATE_FIELDS.find((field) => field in request.body);
        if (immutable) {
          throw new ValidationError(
            `${immutable} cannot be changed after a tax rate is created; create a new tax rate instead`,
            immutable,
          );
        }
        return service.updateTaxRate(db, clock, request.params.id, request.body);
      },
    }),
  ];
}
