// /api/api-keys: create (key shown once), list, get, revoke, rotate. Admin scope only.
import type { Deps } from '../deps.ts';
import { ValidationError } from '../http/errors.ts';
import { type ListQueryInput, listQuerySchema, parseListParams } from '../http/lists.ts';
import { defineRoute, type Route } from '../http/route.ts';
import { API_KEY_SECURITY, errorResponses, idParams, responseOf } from '../http/schemas.ts';
import { parseDuration } from '../shared/durations.ts';
import {
  apiKeyListSchema,
  apiKeySchema,
  createdKeySchema,
  createKeyBody,
  rotateKeyBody,
} from '../modules/api-keys/api-keys.schemas.ts';
import * as service from '../modules/api-keys/api-keys.service.ts';

const tags = ['API keys'];
const common = { tags, security: API_KEY_SECURITY };

/** Routes of the API-keys module (SPEC §3, admin scope). */
export function apiKeyRoutes(deps: Deps): Route[] {
  const { db, clock } = deps;
  return [
    defineRoute({
      method: 'POST',
      url: '/api/api-keys',
      config: { scope: 'admin', idempotency: false }, // the key must not be stored to replay
      schema: {
        ...common,
        operationId: 'createApiKey',
        summary: 'Create an API key',
        body: createKeyBody,
        response: {
          201: responseOf(createdKeySchema, 'The new key, with its secret'),
          ...errorResponses(400, 401, 403),
        },
      },
      handler: async (request, reply) => {
        const { name, scope = 'write', expires_at } = request.body;
        return reply.code(201).send(await service.createApiKey(db, clock, { name, scope, expiresAt: expires_at }));
      },
    }),
    defineRoute<{ Querystring: ListQueryInput }>({
      method: 'GET',
      url: '/api/api-keys',
      config: { scope: 'admin' },
      schema: {
        ...common,
        operationId: 'listApiKeys',
        summary: 'List API keys',
        querystring: listQuerySchema(service.API_KEY_SORT_FIELDS),
        response: { 200: responseOf(apiKeyListSchema, 'A page of keys'), ...errorResponses(400, 401, 403) },
      },
      handler: async (request) => service.listApiKeys(db, parseListParams(request.query)),
    }),
    defineRoute({
      method: 'GET',
      url: '/api/api-keys/:id',
      config: { scope: 'admin' },
      schema: {
        ...common,
        operationId: 'getApiKey',
        summary: 'Get an API key',
        params: idParams,
        response: { 200: responseOf(apiKeySchema, 'The key (never its secret)'), ...errorResponses(401, 403, 404) },
      },
      handler: async (request) => service.getApiKey(db, request.params.id),
    }),
    defineRoute({
      method: 'DELETE',
      url: '/api/api-keys/:id',
      config: { scope: 'admin' },
      schema: {
        ...common,
        operationId: 'revokeApiKey',
        summary: 'Revoke an API key',
        description: 'The key stops working at once. The record stays, with `revoked_at`.',
        params: idParams,
        response: { 200: responseOf(apiKeySchema, 'The key, revoked'), ...errorResponses(401, 403, 404) },
      },
      handler: async (request) => service.revokeApiKey(db, clock, request.params.id),
    }),
    defineRoute({
      method: 'POST',
      url: '/api/api-keys/:id/rotate',
      config: { scope: 'admin', idempotency: false }, // the key must not be stored to replay
      schema: {
        ...common,
        operationId: 'rotateApiKey',
        summary: 'Rotate an API key',
        description: 'Issues a new key (shown once); the old key keeps working for `grace` (default 24h, max 7d).',
        params: idParams,
        body: rotateKeyBody,
        response: {
          201: responseOf(createdKeySchema, 'The new key, with its secret'),
          ...errorResponses(400, 401, 403, 404, 422),
        },
      },
      handler: async (request, reply) => {
        const graceText = request.body?.grace;
        const graceMs = graceText === undefined ? service.DEFAULT_ROTATION_GRACE_MS : parseDuration(graceText);
        if (graceMs === undefined || graceMs > service.MAX_ROTATION_GRACE_MS) {
          throw new ValidationError('grace must be a duration from 0s to 7d, such as 30m or 24h', 'grace');
        }
        return reply.code(201).send(await service.rotateApiKey(db, clock, request.params.id, graceMs));
      },
    }),
  ];
}
