// /api/customers: create, list, get, patch, delete (SPEC §3); the credit balance's ledger and
// manual adjustments (SPEC §14).
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
import {
  BALANCE_TRANSACTION_SORT_FIELDS,
  balanceTransactionListSchema,
  balanceTransactionSchema,
  createAdjustmentBody,
} from '../modules/balances/balances.schemas.ts';

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
    defineRoute<{ Params: { id: string }; Querystring: ListQueryInput & { currency?: string } }>({
      method: 'GET',
      url: '/api/customers/:id/balance-transactions',
      schema: {
        ...common,
        operationId: 'listCustomerBalanceTransactions',
        summary: "List a customer's credit balance transactions",
        description:
          'The append-only ledger of the credit balance (SPEC §14): adjustments, overpayments, credit applied to invoices. The balance per currency is the sum of its transactions.',
        params: idParams,
        querystring: listQuerySchema(BALANCE_TRANSACTION_SORT_FIELDS, {
          currency: { type: 'string', pattern: '^[A-Z]{3}$', description: 'Only this currency (ISO 4217)' },
        }),
        response: {
          200: responseOf(balanceTransactionListSchema, 'A page of balance transactions'),
          ...errorResponses(400, 401, 403, 404),
        },
      },
      handler: async (request) =>
        billing.listCustomerBalanceTransactions(
          db,
          request.params.id,
          parseListParams(request.query),
          request.query.currency,
        ),
    }),
    defineRoute({
      method: 'POST',
      url: '/api/customers/:id/balance-transactions',
      schema: {
        ...common,
        operationId: 'adjustCustomerBalance',
        summary: "Adjust a customer's credit balance",
        description:
          'A manual `adjustment`: positive gives credit, negative takes it. The balance never goes below 0: an adjustment that would take it there is refused with 422 `invalid_state`. Emits `customer.balance_changed`.',
        params: idParams,
        body: createAdjustmentBody,
        response: {
          201: responseOf(balanceTransactionSchema, 'The adjustment'),
          ...errorResponses(400, 401, 403, 404, 413, 415, 422),
        },
      },
      handler: async (request, reply) =>
        reply.code(201).send(await billing.adjustCustomerBalance(db, clock, request.params.id, request.body)),
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
