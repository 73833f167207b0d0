// GET /api/health: liveness plus a database round trip (SPEC §3).
import { sql } from 'kysely';
import type { Deps } from '../../deps.ts';
import { defineRoute, type Route } from '../../http/route.ts';
import { VERSION } from '../../shared/version.ts';

const HEALTH_QUERY_TIMEOUT_MS = 2_000;

const healthSchema = {
  type: 'object',
  required: ['status', 'database', 'version'],
  properties: {
    status: { type: 'string', enum: ['ok', 'degraded'] },
    database: { type: 'string', enum: ['ok', 'unavailable'] },
    version: { type: 'string' },
  },
} as const;

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
        tags: ['Health'],
        summary: 'Health check',
        description: '200 when the database answers; 503 with `"database":"unavailable"` when it does not.',
        response: { 200: healthSchema, 503: healthSchema },
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
