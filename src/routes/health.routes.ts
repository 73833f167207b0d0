// GET /api/health: liveness plus a database round trip (SPEC §3).
import { sql } from 'kysely';
import type { Deps } from '../deps.ts';
import { defineRoute, type Route } from '../http/route.ts';
import { responseOf } from '../http/schemas.ts';
import { VERSION } from '../shared/version.ts';
import { healthSchema } from './health.schemas.ts';

const HEALTH_QUERY_TIMEOUT_MS = 2_000;

/** True when the database answers `select 1` within 2 s. */
async function databaseAnswers(deps: Deps): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), HEALTH_QUERY_TIMEOUT_MS);
  });
  try {
    const probe = sql`select 1`.execute(deps.db).then(() => true as const);
    return await Promise.race([probe, timeout]);
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
  }
}

/** Routes of the health module. */
export function healthRoutes(deps: Deps): Route[] {
  return [
    defineRoute({
      method: 'GET',
      url: '/api/health',
      config: { scope: 'public' },
      schema: {
        operationId: 'getHealth',
        tags: ['Health'],
        summary: 'Health check',
        description: '200 when the database answers; 503 with `"database":"unavailable"` when it does not.',
        security: [],
        response: {
          200: responseOf(healthSchema, 'The service and its database answer'),
          503: {
            ...responseOf(healthSchema, 'The database does not answer'),
            examples: [{ status: 'degraded', database: 'unavailable', version: '0.1.0' }],
          },
        },
      },
      handler: async (_request, reply) => {
        const ok = await databaseAnswers(deps);
        return reply
          .code(ok ? 200 : 503)
          .send({ status: ok ? 'ok' : 'degraded', database: ok ? 'ok' : 'unavailable', version: VERSION });
      },
    }),
  ];
}
