// buildApp(deps): HTTP plumbing first, then every module's routes in ONE list.
import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyInstance } from 'fastify';
import type { DestinationStream } from 'pino';
import type { Deps } from './deps.ts';
import { authenticate } from './http/auth.ts';
import { registerErrorHandling } from './http/errors.ts';
import { registerJsonBodyParser } from './http/json-body.ts';
import { loggerOptions } from './http/logger.ts';
import { registerOpenApi } from './http/openapi.ts';
import type { Route } from './http/route.ts';
import { SHARED_SCHEMAS } from './http/schemas.ts';
import { apiKeyRoutes } from './modules/api-keys/api-keys.routes.ts';
import { customerRoutes } from './modules/customers/customers.routes.ts';
import { dunningRoutes } from './modules/dunning/dunning.routes.ts';
import { eventRoutes } from './modules/events/events.routes.ts';
import { healthRoutes } from './modules/health/health.routes.ts';
import { planRoutes } from './modules/plans/plans.routes.ts';
import { subscriptionRoutes } from './modules/subscriptions/subscriptions.routes.ts';

export const BODY_LIMIT_BYTES = 1024 * 1024;
const REQUEST_ID = /^[\w.:-]{1,128}$/;

/** Every API route, in one list (ARCHITECTURE "Style" 3). */
function allRoutes(deps: Deps): Route[] {
  return [
    ...healthRoutes(deps),
    ...customerRoutes(deps),
    ...planRoutes(deps),
    ...subscriptionRoutes(deps),
    ...dunningRoutes(deps),
    ...eventRoutes(deps),
    ...apiKeyRoutes(deps),
  ];
}

export interface AppOptions {
  /** Where logs go (default stdout); tests pass a stream to read them. */
  logStream?: DestinationStream;
}

/** Builds the Fastify app over `deps`. Call `ready()`/`listen()`; closing the app does not close deps. */
export async function buildApp(deps: Deps, options: AppOptions = {}): Promise<FastifyInstance> {
  const app = Fastify({
    logger: loggerOptions(deps.config.logLevel, options.logStream),
    bodyLimit: BODY_LIMIT_BYTES,
    requestIdHeader: false,
    genReqId: (request) => {
      const given = request.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false, allErrors: false } },
    return503OnClosing: true,
  });
  app.decorateRequest('principal', undefined);
  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });
  registerErrorHandling(app);
  registerJsonBodyParser(app);
  for (const schema of SHARED_SCHEMAS) app.addSchema(schema);
  await registerOpenApi(app);

  await app.register(async (api) => {
    api.addHook('onRequest', authenticate(deps));
    for (const route of allRoutes(deps)) api.route(route);
  });
  return app;
}
