// /api/payments and /api/refunds: read-only lists and lookups (SPEC §3). Payments and
// refunds come into being through verified provider events (POST /api/notify); a refund can
// also be requested through POST /api/payments/{id}/refund (refunds.routes.ts).
import type { Deps } from '../deps.ts';
import { type ListQueryInput, listQuerySchema, parseListParams } from '../http/lists.ts';
import { defineRoute, type Route } from '../http/route.ts';
import { API_KEY_SECURITY, errorResponses, idParams, responseOf } from '../http/schemas.ts';
import { PROVIDER_NAMES } from '../shared/provider-names.ts';
import {
  PAYMENT_SORT_FIELDS,
  paymentListSchema,
  paymentSchema,
  REFUND_SORT_FIELDS,
  refundListSchema,
  refundSchema,
} from '../modules/payments/payments.schemas.ts';
import * as service from '../modules/payments/payments.service.ts';
import { MANUAL_PROVIDER, PAYMENT_STATUSES } from '../db/tables/payments.table.ts';

const common = { tags: ['Payments'], security: API_KEY_SECURITY };
// No NUL: PostgreSQL rejects it in text parameters (a 500), SQLite does not; bad input is a 4xx.
const idFilter = { type: 'string', maxLength: 64, pattern: '^[^\\u0000]*$' } as const;

/** Routes of the payments module. */
export function paymentRoutes(deps: Deps): Route[] {
  const { db } = deps;
  return [
    defineRoute<{ Querystring: ListQueryInput & service.PaymentFilters }>({
      method: 'GET',
      url: '/api/payments',
      schema: {
        ...common,
        operationId: 'listPayments',
        summary: 'List payments',
        querystring: listQuerySchema(PAYMENT_SORT_FIELDS, {
          customer_id: idFilter,
          subscription_id: idFilter,
          status: { type: 'string', enum: [...PAYMENT_STATUSES] },
          provider: { type: 'string', enum: [...PROVIDER_NAMES, MANUAL_PROVIDER] },
        }),
        response: { 200: responseOf(paymentListSchema, 'A page of payments'), ...errorResponses(400, 401, 403) },
      },
      handler: async (request) => {
        const { customer_id, subscription_id, status, provider } = request.query;
        return service.listPayments(db, parseListParams(request.query), {
          customer_id,
          subscription_id,
          status,
          provider,
        });
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/api/payments/:id',
      schema: {
        ...common,
        operationId: 'getPayment',
        summary: 'Get a payment',
        params: idParams,
        response: { 200: responseOf(paymentSchema, 'The payment'), ...errorResponses(401, 403, 404) },
      },
      handler: async (request) => service.getPayment(db, request.params.id),
    }),
    defineRoute<{ Querystring: ListQueryInput & { payment_id?: string } }>({
      method: 'GET',
      url: '/api/refunds',
      schema: {
        ...common,
        operationId: 'listRefunds',
        summary: 'List refunds',
        querystring: listQuerySchema(REFUND_SORT_FIELDS, { payment_id: idFilter }),
        response: { 200: responseOf(refundListSchema, 'A page of refunds'), ...errorResponses(400, 401, 403) },
      },
      handler: async (request) =>
        service.listRefunds(db, parseListParams(request.query), { payment_id: request.query.payment_id }),
    }),
    defineRoute({
      method: 'GET',
      url: '/api/refunds/:id',
      schema: {
        ...common,
        operationId: 'getRefund',
        summary: 'Get a refund',
        params: idParams,
        response: { 200: responseOf(refundSchema, 'The refund'), ...errorResponses(401, 403, 404) },
      },
      handler: async (request) => service.getRefund(db, request.params.id),
    }),
  ];
}
