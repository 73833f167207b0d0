// Security headers (@fastify/helmet) for a JSON API: nothing a response says may be run,
// framed or sniffed. /docs is the one HTML page; it gets a policy that lets the locally
// served Scalar bundle run, and no other origin. No CORS: API keys must not be used from
// browsers (docs/operations.md "Security headers and CORS"), so no Access-Control-Allow-* header is ever sent for the API.
import { createHash } from 'node:crypto';
import helmet from '@fastify/helmet';
import type { FastifyInstance } from 'fastify';

/** The API's policy: responses are data, never documents. */
const API_CSP = {
  'default-src': ["'none'"],
  'frame-ancestors': ["'none'"],
  'base-uri': ["'none'"],
  'form-action': ["'none'"],
};

/**
 * /docs (Scalar, served from this server): its script file, its inline start-up script (by
 * hash, added per response), the style it injects at run time, and requests to this origin
 * only (the OpenAPI document and "try it" calls).
 */
const DOCS_CSP = {
  'default-src': ["'self'"],
  'script-src': ["'self'"],
  'style-src': ["'self'", "'unsafe-inline'"],
  'img-src': ["'self'", 'data:'],
  'font-src': ["'self'", 'data:'],
  'connect-src': ["'self'"],
  'object-src': ["'none'"],
  'frame-ancestors': ["'none'"],
  'base-uri': ["'self'"],
  'form-action': ["'self'"],
};

const DOCS_PREFIX = '/docs';
const INLINE_SCRIPT = /<script\b(?![^>]*\bsrc=)[^>]*>([\s\S]*?)<\/script>/gi;

function serializeCsp(directives: Record<string, string[]>): string {
  return Object.entries(directives)
    .map(([name, values]) => `${name} ${values.join(' ')}`)
    .join('; ');
}

/** `'sha256-…'` sources for every inline script of an HTML page. */
export function inlineScriptHashes(html: string): string[] {
  return [...html.matchAll(INLINE_SCRIPT)].map(
    (match) =>
      `'sha256-${createHash('sha256')
        .update(match[1] ?? '')
        .digest('base64')}'`,
  );
}

/**
 * Registers helmet for every route (call before any route is added), with the API policy
 * and, on /docs, the docs policy plus the hashes of the page's inline scripts.
 */
export async function registerSecurityHeaders(app: FastifyInstance): Promise<void> {
  // Route-level helmet options for the docs routes, which a plugin (Scalar) registers.
  app.addHook('onRoute', (route) => {
    if (route.url === DOCS_PREFIX || route.url.startsWith(`${DOCS_PREFIX}/`)) {
      route.config = {
        ...route.config,
        helmet: { contentSecurityPolicy: { useDefaults: false, directives: DOCS_CSP } },
      } as typeof route.config;
    }
  });
  await app.register(helmet, {
    contentSecurityPolicy: { useDefaults: false, directives: API_CSP },
    frameguard: { action: 'deny' },
    referrerPolicy: { policy: 'no-referrer' },
  });
  app.addHook('onSend', async (request, reply, payload) => {
    const url = request.routeOptions.url;
    if (typeof payload !== 'string' || !url?.startsWith(`${DOCS_PREFIX}/`)) return payload;
    const hashes = inlineScriptHashes(payload);
    if (hashes.length > 0) {
      const directives = { ...DOCS_CSP, 'script-src': [...DOCS_CSP['script-src'], ...hashes] };
      reply.header('content-security-policy', serializeCsp(directives));
    }
    return payload;
  });
}
