// Security headers (@fastify/helmet) for a JSON API: nothing a response says may be run,
// framed or sniffed. /docs gets a policy that lets the locally served Scalar bundle run,
// and no other origin. (The hosted invoice pages under /i replace the CSP with their own,
// stricter one: routes/invoices.page.routes.ts.) No CORS: API keys must not be used from
// browsers (docs/operations.md "Security headers and CORS"), so no Access-Control-Allow-* header is ever sent for the API.
//
// The header set is constant per route class (API or /docs), so it is computed ONCE, by
// @fastify/helmet itself on a throwaway instance, and set on every response from that copy:
// the same names, values and spelling helmet sends, without rebuilding helmet's middleware
// (parseDirectives, dashify …) per request (a profile of the list under load, docs/performance.md).
import { createHash } from 'node:crypto';
import helmet, { type FastifyHelmetOptions } from '@fastify/helmet';
import Fastify, { type FastifyInstance, type onSendHookHandler } from 'fastify';

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

const API_OPTIONS: FastifyHelmetOptions = {
  contentSecurityPolicy: { useDefaults: false, directives: API_CSP },
  frameguard: { action: 'deny' },
  referrerPolicy: { policy: 'no-referrer' },
};
/** Route-level helmet options of the docs routes (they replace the CSP of API_OPTIONS). */
const DOCS_ROUTE_OPTIONS = { contentSecurityPolicy: { useDefaults: false, directives: DOCS_CSP } };

/** A header set as helmet writes it: `[name, value]`. */
export type HeaderSet = readonly (readonly [string, string | number | string[]])[];

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The security headers of this route (set by registerSecurityHeaders; API ones when absent). */
    securityHeaders?: HeaderSet;
  }
}

/**
 * The headers @fastify/helmet sets with `options` on a route (and `routeOptions` as that
 * route's helmet config, as the docs routes have), read from a throwaway Fastify instance
 * right after helmet's hooks ran: nothing else has set a header at that point.
 */
export async function helmetHeaderSet(options: FastifyHelmetOptions, routeOptions?: object): Promise<HeaderSet> {
  const probe = Fastify({ logger: false });
  let captured: HeaderSet = [];
  try {
    await probe.register(helmet, options);
    probe.addHook('onRequest', async (_request, reply) => {
      const raw = reply.raw;
      captured = raw.getHeaderNames().map((name) => [name, raw.getHeader(name)!] as const);
    });
    probe.get('/', { config: routeOptions ? { helmet: routeOptions } : {} } as object, async () => '');
    await probe.inject({ method: 'GET', url: '/' });
  } finally {
    await probe.close();
  }
  return captured;
}

/**
 * Sets the request id (`x-request-id`: the request's id, see app.ts genReqId) and helmet's
 * headers on every response (call before any route is added): the API policy,
 * and on /docs the docs policy plus the hashes of the page's inline scripts. Both header sets
 * are computed once, here (helmetHeaderSet).
 */
export async function registerSecurityHeaders(app: FastifyInstance): Promise<void> {
  const apiHeaders = await helmetHeaderSet(API_OPTIONS);
  const docsHeaders = await helmetHeaderSet(API_OPTIONS, DOCS_ROUTE_OPTIONS);
  // The docs routes, which a plugin (Scalar) registers, get the docs set, and the pages among
  // them a hook adding their inline scripts' hashes (route-level: API requests never run it).
  const addScriptHashes: onSendHookHandler = (_request, reply, payload, done) => {
    if (typeof payload === 'string') {
      const hashes = inlineScriptHashes(payload);
      if (hashes.length > 0) {
        const directives = { ...DOCS_CSP, 'script-src': [...DOCS_CSP['script-src'], ...hashes] };
        reply.header('content-security-policy', serializeCsp(directives));
      }
    }
    done(null, payload);
  };
  app.addHook('onRoute', (route) => {
    if (route.url === DOCS_PREFIX || route.url.startsWith(`${DOCS_PREFIX}/`)) {
      route.config = { ...route.config, securityHeaders: docsHeaders } as typeof route.config;
    }
    if (route.url.startsWith(`${DOCS_PREFIX}/`)) {
      const existing = route.onSend === undefined ? [] : [route.onSend].flat();
      route.onSend = [...existing, addScriptHashes] as typeof route.onSend;
    }
  });
  // One hook for every constant-per-route header and the request id (`x-request-id`, first,
  // as clients read it), through Fastify's reply headers (written once by writeHead), not the
  // raw response's setHeader (each call validated and stored apart): names go out in lower case.
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    const headers = request.routeOptions.config.securityHeaders ?? apiHeaders;
    for (let i = 0; i < headers.length; i += 1) reply.header(headers[i]![0], headers[i]![1]);
    done();
  });
}
