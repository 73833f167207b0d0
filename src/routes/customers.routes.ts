// /api/customers: create, list, get, patch, delete (SPEC §3).
import type { Deps } from '../deps.ts';
import { type ListQueryInput, listQuerySchema, parseListParams } from '../http/lists.ts';
import { defineRoute, type Route } from '../http/route.ts';
import { API_KEY_SECURITY, errorResponses, idParams, responseOf } from '../http/schemas.ts';
import {
  CUSTOMER_SORT_FIELDS,
  createCustomerBody,
  customerDetailSchema,
  customerListSchema,
  customerSchema,
  updateCustomerBody,
} from '../modules/customers/customers.schemas.ts';
import * as service from '../modules/customers/customers.service.ts';
import * as billing from '../billing/customers.ts';

const common = { tags: ['Customers'], security: API_KEY_SECURITY };

/** Routes of the customers module. */
export function customerRoutes(deps: Deps): Route[] {
  const { db, clock, config } = deps;
  return [
    defineRoute({
      method: 'POST',
      url: '/api/customers',
      schema: {
        ...common,
        operationId: 'createCustomer',
        summary: 'Create a customer',
        description:
          'Emails are unique among customers, compared by Unicode NFC then lower case; internationalised addresses (RFC 6531) are accepted. Emits `customer.created`.',
        body: createCustomerBody,
        response: {
          201: responseOf(customerSchema, 'The new customer'),
          ...errorResponses(400, 401, 403, 409, 413, 415),
        },
      },
      handler: async (request, reply) =>
        reply
          .code(201)
          .send(await billing.createCustomerWithDiscount(db, clock, request.body, { testClocks: config.testClocks })),
    }),
    defineRoute<{ Querystring: ListQueryInput }>({
      method: 'GET',
      url: '/api/customers',
      schema: {
        ...common,
        operationId: 'listCustomers',
        summary: 'List customers',
        querystring: listQuerySchema(CUSTOMER_SORT_FIELDS),
        response: { 200: responseOf(customerListSchema, 'A page of customers'), ...errorResponses(400, 401, 403) },
      },
      // Not async: on SQLite the page is usually read synchronously, and Fastify sends a
      // returned value without waiting for a promise.
      handler: (request) => service.listCustomers(db, parseListParams(request.query)),
    }),
    defineRoute({
      method: 'GET',
      url: '/api/customers/:id',
      schema: {
        ...common,
        operationId: 'getCustomer',
        summary: 'Get a customer',
        description: '`balances`: the credit balance per currency, in minor units (non-zero ones only).',
        params: idParams,
        response: {
          200: responseOf(customerDetailSchema, 'The customer and its credit balances'),
          ...errorResponses(401, 403, 404),
        },
      },
      handler: async (request) => billing.getCustomerWithBalances(db, clock, request.params.id),
    }),
    defineRoute({
      method: 'PATCH',
      url: '/api/customers/:id',
      schema: {
        ...common,
        operationId: 'updateCustomer',
        summary: 'Update a customer',
        description: 'Emits `customer.updated` when anything changed.',
        params: idParams,
        body: updateCustomerBody,
        response: {
          200: responseOf(customerSchema, 'The customer as updated'),
          ...errorResponses(400, 401, 403, 404, 409, 413, 415),
        },
      },
      handler: async (request) => billing.updateCustomerWithDiscount(db, clock, request.params.id, request.body),
    }),
    defineRoute({
      method: 'DELETE',
      url: '/api/customers/:id',
      schema: {
        ...common,
        operationId: 'deleteCustomer',
        summary: 'Delete a customer',
        description:
          'Emits `customer.deleted`. Refused with 409 while the customer has a subscription that is not cancelled or expired.',
        params: idParams,
        response: { 204: { type: 'null', description: 'Deleted' }, ...errorResponses(401, 403, 404, 409) },
      },
      handler: async (request, reply) => {
        await billing.deleteCustomer(db, clock, request.params.id);
        return reply.code(204).send();
      },
    }),
  ];
}
