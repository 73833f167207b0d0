// Rate limits (SPEC §1 RATE_LIMIT_*, §2): RATE_LIMIT_MAX requests per RATE_LIMIT_WINDOW per
// API key on authenticated routes; ×10 per client IP on public routes, and ×10 per client IP
// for requests that fail authentication (two separate budgets). @fastify/rate-limit keeps the counts, in Redis when REDIS_URL is set
// so every instance spends one budget. On a protected route the IP's budget is checked
// BEFORE the key is looked up, so a flood of bad keys is answered 429 without a query.
import rateLimit, { normalizeIP } from '@fastify/rate-limit';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Redis } from 'ioredis';
import type { Config } from '../config.ts';
import { requiredScope } from './auth.ts';
import { AppError } from './errors.ts';

/** Public routes (and failed authentication) get this many times RATE_LIMIT_MAX per IP. */
export const PUBLIC_LIMIT_FACTOR = 10;

/** Prefix of every rate-limit key in Redis; `?keyPrefix=…` in REDIS_URL adds another in front. */
const REDIS_NAMESPACE = 'billing:rate-limit:';

type Limiter = ReturnType<FastifyInstance['createRateLimit']>;
type LimitResult = Awaited<ReturnType<Limiter>>;
type Counted = Extract<LimitResult, { isAllowed: false }>;

/**
 * True for requests no API key is asked for: routes declared `scope: 'public'`, everything
 * outside `/api/` (/openapi.json, /docs) and unknown routes (404).
 */
function isPublic(request: FastifyRequest): boolean {
  const url = request.routeOptions.url;
  if (url === undefined || !url.startsWith('/api/')) return true;
  return requiredScope(request) === 'public';
}

/** `RateLimit-Limit`, `-Remaining`, `-Reset` (seconds until the window resets), SPEC §2. */
function setHeaders(reply: FastifyReply, counted: Counted, remaining: number): void {
  reply.header('ratelimit-limit', counted.max);
  reply.header('ratelimit-remaining', Math.max(0, remaining));
  reply.header('ratelimit-reset', Math.max(0, counted.ttlInSeconds));
}

/** The 429 (SPEC §2): envelope `rate_limit_error` plus `Retry-After` in whole seconds (≥ 1). */
function tooManyRequests(reply: FastifyReply, counted: Counted): AppError {
  const seconds = Math.max(1, counted.ttlInSeconds);
  setHeaders(reply, counted, 0);
  reply.header('retry-after', seconds);
  return new AppError('rate_limit_error', `rate limit exceeded; retry in ${seconds} s`, 429);
}

/** The Redis client for the shared store: fails fast rather than queueing while Redis is away. */
function connectRedis(url: string): Redis {
  return new Redis(url, {
    lazyConnect: true,
    connectTimeout: 1_000,
    commandTimeout: 1_000,
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
  });
}

/**
 * Registers the limits on `app` (root level, before the routes). RATE_LIMIT_MAX=0 registers
 * nothing: no counting, no headers. With REDIS_URL the counts live in Redis; if Redis does
 * not answer, requests are let through (logged once per outage) rather than refused: a rate
 * limiter must not take the API down with it.
 */
export async function registerRateLimits(app: FastifyInstance, config: Readonly<Config>): Promise<void> {
  const max = config.rateLimitMax;
  if (max === 0) return;
  let redis: Redis | undefined;
  if (config.redisUrl) {
    redis = connectRedis(config.redisUrl);
    redis.on('error', () => {}); // reported through failed counts below, once per outage
    app.addHook('onClose', async () => {
      redis?.disconnect();
    });
    await redis.connect().catch((error: unknown) => {
      app.log.warn({ err: error }, 'rate limits: Redis is not answering; requests are let through until it does');
    });
  }
  await app.register(rateLimit, {
    global: false,
    timeWindow: config.rateLimitWindowMs,
    redis,
    nameSpace: REDIS_NAMESPACE,
    cache: 10_000,
  });
  // Two IP budgets, so a busy public route (a health probe, provider events) never blocks
  // the keyed traffic behind the same address, and failed logins never block public routes.
  const perIpPublic = app.createRateLimit({
    max: max * PUBLIC_LIMIT_FACTOR,
    keyGenerator: (request) => `public:${normalizeIP(request.ip)}`,
  });
  const perIpFailedAuth = app.createRateLimit({
    max: max * PUBLIC_LIMIT_FACTOR,
    keyGenerator: (request) => `failed-auth:${normalizeIP(request.ip)}`,
  });
  const perKey = app.createRateLimit({
    max,
    keyGenerator: (request) => `key:${request.principal?.id ?? ''}`,
  });

  let storeDown = false;
  /** Runs a limiter; undefined when the store failed (the request goes through). */
  const count = async (limiter: Limiter, request: FastifyRequest, increment = true) => {
    try {
      const result = await limiter(request, { increment });
      if (storeDown) app.log.info('rate limits: the store answers again');
      storeDown = false;
      return result.isAllowed ? undefined : result;
    } catch (error) {
      if (!storeDown) app.log.error({ err: error }, 'rate limits: the store failed; requests are let through');
      storeDown = true;
      return undefined;
    }
  };

  // Before authentication: public requests spend their IP budget; protected ones only look
  // at the failed-authentication budget, and are refused once this IP has used it up.
  app.addHook('onRequest', async (request, reply) => {
    if (isPublic(request)) {
      const counted = await count(perIpPublic, request);
      if (!counted) return;
      if (counted.isExceeded) throw tooManyRequests(reply, counted);
      setHeaders(reply, counted, counted.remaining);
      return;
    }
    const seen = await count(perIpFailedAuth, request, false);
    if (seen && seen.remaining === 0 && seen.ttl > 0) throw tooManyRequests(reply, seen);
  });

  // After authentication (every onRequest hook has run): the key's own budget.
  const keyCounted = new WeakSet<FastifyRequest>();
  app.addHook('preParsing', async (request, reply) => {
    if (!request.principal) return;
    keyCounted.add(request);
    const counted = await count(perKey, request);
    if (!counted) return;
    if (counted.isExceeded) throw tooManyRequests(reply, counted);
    setHeaders(reply, counted, counted.remaining);
  });

  // Requests refused during authentication count too: a 401 spends the IP's failed-auth
  // budget, a 403 (known key, scope too small) the key's; the response shows what is left.
  app.addHook('onSend', async (request, reply, payload) => {
    let counted: Counted | undefined;
    if (reply.statusCode === 401 && !isPublic(request)) counted = await count(perIpFailedAuth, request);
    else if (request.principal && !keyCounted.has(request)) counted = await count(perKey, request);
    if (counted) setHeaders(reply, counted, counted.remaining);
    return payload;
  });
}
