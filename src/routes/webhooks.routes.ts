// /api/webhooks: endpoints, their deliveries, redelivery and the test event (SPEC §3, §6).
import type { Deps } from '../deps.ts';
import { type ListQueryInput, listQuerySchema, parseListParams } from '../http/lists.ts';
import { defineRoute, type Route } from '../http/route.ts';
import { API_KEY_SECURITY, errorResponses, idParams, responseOf } from '../http/schemas.ts';
import * as deliveries from '../modules/webhooks/webhooks.deliveries.ts';
import * as endpoints from '../modules/webhooks/webhooks.endpoints.ts';
import { AllowedCidrs, checkWebhookUrl } from '../modules/webhooks/webhooks.url-safety.ts';
import {
  createEndpointBody,
  DELIVERY_SORT_FIELDS,
  deliveryListSchema,
  deliveryParams,
  deliverySchema,
  ENDPOINT_SORT_FIELDS,
  endpointListSchema,
  endpointSchema,
  updateEndpointBody,
} from '../modules/webhooks/webhooks.schemas.ts';
import type { DeliveryStatus, EndpointStatus } from '../db/tables/webhooks.table.ts';
import { webhookNetwork } from '../modules/webhooks/webhooks.network.ts';

const common = { tags: ['Webhooks'], security: API_KEY_SECURITY };

/** Routes of the webhooks module. */
export function webhookRoutes(deps: Deps): Route[] {
  const { db, clock } = deps;
  const allowed = new AllowedCidrs(deps.config.webhookAllowPrivateCidrs);
  // Read per request, so the network settings (resolver) can be swapped after the app is built.
  const checkUrl: endpoints.UrlCheck = (url) => checkWebhookUrl(url, webhookNetwork(deps).resolve, allowed);
  return [
    defineRoute({
      method: 'POST',
      url: '/api/webhooks',
      schema: {
        ...common,
        operationId: 'createWebhookEndpoint',
        summary: 'Create a webhook endpoint',
        description:
          'The url must be https, without credentials, ≤ 2048 characters, and resolve only to public addresses. ' +
          'Deliveries are signed when a secret is given; the secret is never returned (`has_secret`), ' +
          'except a generated one (`"secret": "generate"`), shown once in this response.',
        body: createEndpointBody,
        response: { 201: responseOf(endpointSchema, 'The new endpoint'), ...errorResponses(400, 401, 403, 413, 415) },
      },
      handler: async (request, reply) =>
        reply.code(201).send(await endpoints.createEndpoint(db, clock, checkUrl, request.body)),
    }),
    defineRoute<{ Querystring: ListQueryInput & { status?: EndpointStatus } }>({
      method: 'GET',
      url: '/api/webhooks',
      schema: {
        ...common,
        operationId: 'listWebhookEndpoints',
        summary: 'List webhook endpoints',
        querystring: listQuerySchema(ENDPOINT_SORT_FIELDS, {
          status: { type: 'string', enum: ['enabled', 'disabled'] },
        }),
        response: { 200: responseOf(endpointListSchema, 'A page of endpoints'), ...errorResponses(400, 401, 403) },
      },
      handler: async (request) =>
        endpoints.listEndpoints(db, parseListParams(request.query), { status: request.query.status }),
    }),
    defineRoute({
      method: 'GET',
      url: '/api/webhooks/:id',
      schema: {
        ...common,
        operationId: 'getWebhookEndpoint',
        summary: 'Get a webhook endpoint',
        params: idParams,
        response: { 200: responseOf(endpointSchema, 'The endpoint'), ...errorResponses(401, 403, 404) },
      },
      handler: async (request) => endpoints.getEndpoint(db, request.params.id),
    }),
    defineRoute({
      method: 'PATCH',
      url: '/api/webhooks/:id',
      schema: {
        ...common,
        operationId: 'updateWebhookEndpoint',
        summary: 'Update a webhook endpoint',
        description:
          'A new url is checked as at creation. Disabling emits `webhook_endpoint.disabled`; ' +
          'pending deliveries wait while the endpoint is disabled and resume when it is enabled.',
        params: idParams,
        body: updateEndpointBody,
        response: {
          200: responseOf(endpointSchema, 'The endpoint as updated'),
          ...errorResponses(400, 401, 403, 404, 413, 415),
        },
      },
      handler: async (request) => endpoints.updateEndpoint(db, clock, checkUrl, request.params.id, request.body),
    }),
    defineRoute({
      method: 'DELETE',
      url: '/api/webhooks/:id',
      schema: {
        ...common,
        operationId: 'deleteWebhookEndpoint',
        summary: 'Delete a webhook endpoint',
        description: 'Its pending deliveries are dropped, with its delivery history.',
        params: idParams,
        response: { 204: { type: 'null', description: 'Deleted' }, ...errorResponses(401, 403, 404) },
      },
      handler: async (request, reply) => {
        await endpoints.deleteEndpoint(db, clock, request.params.id);
        return reply.code(204).send();
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/api/webhooks/:id/test',
      schema: {
        ...common,
        operationId: 'sendWebhookTestEvent',
        summary: 'Send a test event',
        description:
          'Emits a `webhook.test` event (data: the endpoint) delivered to this endpoint only. Answers 202 with the queued delivery.',
        params: idParams,
        response: { 202: responseOf(deliverySchema, 'The queued delivery'), ...errorResponses(401, 403, 404, 422) },
      },
      handler: async (request, reply) =>
        reply.code(202).send(await deliveries.sendTestEvent(db, clock, request.params.id)),
    }),
    defineRoute<{
      Params: { id: string };
      Querystring: ListQueryInput & { status?: DeliveryStatus; event_id?: string };
    }>({
      method: 'GET',
      url: '/api/webhooks/:id/deliveries',
      schema: {
        ...common,
        operationId: 'listWebhookDeliveries',
        summary: "List an endpoint's deliveries",
        description:
          'Each delivery with every attempt: status code, duration, error, time, and ≤ 1 KiB of the response body.',
        params: idParams,
        querystring: listQuerySchema(DELIVERY_SORT_FIELDS, {
          status: { type: 'string', enum: ['pending', 'succeeded', 'failed'] },
          event_id: { type: 'string', maxLength: 64 },
        }),
        response: {
          200: responseOf(deliveryListSchema, 'A page of deliveries'),
          ...errorResponses(400, 401, 403, 404),
        },
      },
      handler: async (request) => {
        const { status, event_id } = request.query;
        return deliveries.listDeliveries(db, request.params.id, parseListParams(request.query), {
          status,
          event_id,
        });
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/api/webhooks/:id/deliveries/:delivery_id/retry',
      schema: {
        ...common,
        operationId: 'retryWebhookDelivery',
        summary: 'Redeliver now',
        description:
          'Makes the delivery due now, whatever its status; the worker sends it (re-signed, same event id). Answers 202.',
        params: deliveryParams,
        response: { 202: responseOf(deliverySchema, 'The delivery, due now'), ...errorResponses(401, 403, 404, 422) },
      },
      handler: async (request, reply) =>
        reply.code(202).send(await deliveries.retryDelivery(db, clock, request.params.id, request.params.delivery_id)),
    }),
  ];
}
