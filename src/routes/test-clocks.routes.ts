// /api/test-clocks: create, list, get, delete, advance (SPEC §11). Only with TEST_CLOCKS=true:
// otherwise every route answers 404 like an unknown route, before reading its body.
import type { onRequestHookHandler } from 'fastify';
import type { Deps } from '../deps.ts';
import { AppError } from '../http/errors.ts';
import { type ListQueryInput, listQuerySchema, parseListParams } from '../http/lists.ts';
import { defineRoute, type Route } from '../http/route.ts';
import { API_KEY_SECURITY, errorResponses, idParams, responseOf } from '../http/schemas.ts';
import {
  advanceTestClockBody,
  createTestClockBody,
  TEST_CLOCK_SORT_FIELDS,
  testClockListSchema,
  testClockSchema,
} from '../modules/test-clocks/test-clocks.schemas.ts';
import * as service from '../modules/test-clocks/test-clocks.service.ts';
import * as billing from '../billing/test-clocks.ts';

const common = { tags: ['Test clocks'], security: API_KEY_SECURITY };

/** Routes of the test-clocks module. */
export function testClockRoutes(deps: Deps): Route[] {
  const { db, clock, config } = deps;
  const onlyWhenEnabled: onRequestHookHandler = async (request) => {
    if (!config.testClocks) {
      throw new AppError('not_found', `no route for ${request.method} ${request.url.split('?')[0]?.slice(0, 200)}`);
    }
  };
  const routes = [
    defineRoute({
      method: 'POST',
      url: '/api/test-clocks',
      schema: {
        ...common,
        operationId: 'createTestClock',
        summary: 'Create a test clock',
        body: createTestClockBody,
        response: {
          201: responseOf(testClockSchema, 'The new clock, ready'),
          ...errorResponses(400, 401, 403, 404, 413, 415),
        },
      },
      handler: async (request, reply) => reply.code(201).send(await service.createTestClock(db, clock, request.body)),
    }),
    defineRoute<{ Querystring: ListQueryInput }>({
      method: 'GET',
      url: '/api/test-clocks',
      schema: {
        ...common,
        operationId: 'listTestClocks',
        summary: 'List test clocks',
        querystring: listQuerySchema(TEST_CLOCK_SORT_FIELDS),
        response: {
          200: responseOf(testClockListSchema, 'A page of test clocks'),
          ...errorResponses(400, 401, 403, 404),
        },
      },
      handler: async (request) => service.listTestClocks(db, parseListParams(request.query)),
    }),
    defineRoute({
      method: 'GET',
      url: '/api/test-clocks/:id',
      schema: {
        ...common,
        operationId: 'getTestClock',
        summary: 'Get a test clock',
        description: 'Poll it after an advance: `status` is `ready` once every due piece of work has run.',
        params: idParams,
        response: { 200: responseOf(testClockSchema, 'The clock'), ...errorResponses(401, 403, 404) },
      },
      handler: async (request) => service.getTestClock(db, request.params.id),
    }),
    defineRoute({
      method: 'DELETE',
      url: '/api/test-clocks/:id',
      schema: {
        ...common,
        operationId: 'deleteTestClock',
        summary: 'Delete a test clock and everything attached to it',
        description:
          'Deletes the clock and its customers with their subscriptions, invoices, dunning cases and payment methods. Payments recorded for them stay, detached; events already emitted stay. 409 `conflict` (nothing deleted; `details.charges_in_flight`) while a charge of its invoices is in flight with the provider (`pending`, or `unknown` and still to be asked about).',
        params: idParams,
        response: { 204: { type: 'null', description: 'Deleted' }, ...errorResponses(401, 403, 404, 409) },
      },
      handler: async (request, reply) => {
        await billing.deleteTestClock(db, request.params.id);
        return reply.code(204).send();
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/api/test-clocks/:id/advance',
      schema: {
        ...common,
        operationId: 'advanceTestClock',
        summary: 'Advance a test clock',
        description:
          "Accepted at once (202, `status: advancing`, `test_clock.advancing`); the worker then runs, in due-time order up to `frozen_time`, every renewal, past-due change, dunning step and final action, incomplete expiry and period-end cancellation of the clock's customers, and sets `status: ready` (`test_clock.ready`). 409 `conflict` while an advance runs.",
        params: idParams,
        body: advanceTestClockBody,
        response: {
          202: responseOf(testClockSchema, 'The clock, advancing'),
          ...errorResponses(400, 401, 403, 404, 409, 413, 415),
        },
      },
      handler: async (request, reply) =>
        reply.code(202).send(await service.advanceTestClock(db, clock, request.params.id, request.body)),
    }),
  ];
  return routes.map((route) => ({ ...route, onRequest: onlyWhenEnabled }));
}
