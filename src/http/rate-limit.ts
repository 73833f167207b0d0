// Rate limits (SPEC §1 RATE_LIMIT_*, §2): RATE_LIMIT_MAX requests per RATE_LIMIT_WINDOW per
// API key on authenticated routes; ×10 per client IP on public routes, and ×10 per client IP
// for requests that fail authentication (two separate budgets). @fastify/rate-limit keeps the
// counts, in Redis when REDIS_URL is set so every instance spends one budget. On a protected
// route the IP's failed-auth budget is counted BEFORE the key is looked up (take a slot, then
// compare: failed-auth-budget.ts), so at most the budget of bad keys is ever looked up.
import rateLimit, { normalizeIP } from '@fastify/rate-limit';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Redis } from 'ioredis';
import type { Config } from '../config.ts';
import { requiredScope } from './route.ts';
import { MemorySlotStore, RedisSlotStore, type Slot, type SlotStore } from './failed-auth-budget.ts';
import { AppError } from './errors.ts';

/** Public routes (and failed authentication) get this many times RATE_LIMIT_MAX per IP. */
export const PUBLIC_LIMIT_FACTOR = 10;

/** Prefix of every rate-limit key in Redis; `?keyPrefix=…` in REDIS_URL adds another in front. */
const REDIS_NAMESPACE = 'billing:rate-limit:';

type Limiter = ReturnType<FastifyInstance['createRateLimit']>;
type LimitResult = Awaited<ReturnType<Limiter>>;
type Counted = Extract<LimitResult, { isAllowed: false }>;
/** What the RateLimit-* headers show of a budget. */
type Budget = Pick<Counted, 'max' | 'ttlInSeconds'>;

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
function setHeaders(reply: FastifyReply, counted: Budget, remaining: number): void {
  reply.header('ratelimit-limit', counted.max);
  reply.header('ratelimit-remaining', Math.max(0, remaining));
  reply.header('ratelimit-reset', Math.max(0, counted.ttlInSeconds));
}

/** The 429 (SPEC §2): envelope `rate_limit_error` plus `Retry-After` in whole seconds (≥ 1). */
function tooManyRequests(reply: FastifyReply, counted: Budget): AppError {
  const seconds = Math.max(1, counted.ttlInSeconds);
  setHeaders(reply, counted, 0);
  reply.header('retry-after', seconds);
  return new AppError('rate_limit_error', `rate limit exceeded; retry in ${seconds} s`);
}

/**
 * The Redis client for the shared store: fails fast rather than queueing while Redis is away.
 * ioredis is loaded only here: an instance without REDIS_URL never pays its start-up.
 */
async function connectRedis(url: string): Promise<Redis> {
  const { Redis } = await import('ioredis');
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
    redis = await connectRedis(config.redisUrl);
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
  const failedAuthMax = max * PUBLIC_LIMIT_FACTOR;
  const failedAuthStore: SlotStore = redis
    ? new RedisSlotStore(redis, `${REDIS_NAMESPACE}failed-auth-budget:`)
    : new MemorySlotStore();
  const budgetOf = (slot: Slot): Budget => ({ max: failedAuthMax, ttlInSeconds: Math.ceil(slot.ttlMs / 1000) });
  const perKey = app.createRateLimit({
    max,
    keyGenerator: (request) => `key:${request.principal?.id ?? ''}`,
  });

  let storeDown = false;
  /** Runs a store operation; undefined when the store failed (the request goes through). */
  const guarded = async <T>(operation: () => Promise<T>): Promise<T | undefined> => {
    try {
      const result = await operation();
      if (storeDown) app.log.info('rate limits: the store answers again');
      storeDown = false;
      return result;
    } catch (error) {
      if (!storeDown) app.log.error({ err: error }, 'rate limits: the store failed; requests are let through');
      storeDown = true;
      return undefined;
    }
  };
  /** Runs a limiter; undefined when under no limit or the store failed. */
  const count = async (limiter: Limiter, request: FastifyRequest) => {
    const result = await guarded(() => limiter(request));
    return result?.isAllowed === false ? result : undefined;
  };

  // The failed-auth slot each protected request holds while it is authenticated. It is kept
  // (spent) only when the answer is 401, and given back in every other case.
  const slots = new WeakMap<FastifyRequest, Slot>();
  const failedAuthKey = (request: FastifyRequest) => normalizeIP(request.ip);
  const giveBack = async (request: FastifyRequest) => {
    const slot = slots.get(request);
    if (!slot) return;
    slots.delete(request);
    await guarded(() => failedAuthStore.giveBack(failedAuthKey(request), slot.window));
  };

  // Before authentication: public requests spend their IP budget; protected ones take a slot
  // of the failed-authentication budget first (one atomic increment), then compare, so a
  // burst of bad keys cannot all slip past a check made before any of them was counted.
  app.addHook('onRequest', async (request, reply) => {
    if (isPublic(request)) {
      const counted = await count(perIpPublic, request);
      if (!counted) return;
      if (counted.isExceeded) throw tooManyRequests(reply, counted);
      setHeaders(reply, counted, counted.remaining);
      return;
    }
    const slot = await guarded(() => failedAuthStore.take(failedAuthKey(request), config.rateLimitWindowMs));
    if (!slot) return;
    slots.set(request, slot);
    if (slot.count > failedAuthMax) {
      await giveBack(request); // refused before the lookup: not a failed authentication
      throw tooManyRequests(reply, budgetOf(slot));
    }
  });

  // After authentication (every onRequest hook has run): the slot goes back, and the key's
  // own budget is spent.
  const keyCounted = new WeakSet<FastifyRequest>();
  app.addHook('preParsing', async (request, reply) => {
    if (!request.principal) return;
    await giveBack(request);
    keyCounted.add(request);
    const counted = await count(perKey, request);
    if (!counted) return;
    if (counted.isExceeded) throw tooManyRequests(reply, counted);
    setHeaders(reply, counted, counted.remaining);
  });

  // Requests refused during authentication count too: a 401 keeps its failed-auth slot, a 403
  // (known key, scope too small) spends the key's budget; the response shows what is left.
  app.addHook('onSend', async (request, reply, payload) => {
    const slot = slots.get(request);
    if (slot && reply.statusCode === 401) {
      slots.delete(request);
      setHeaders(reply, budgetOf(slot), failedAuthMax - slot.count);
      return payload;
    }
    await giveBack(request);
    if (request.principal && !keyCounted.has(request)) {
      const counted = await count(perKey, request);
      if (counted) setHeaders(reply, counted, counted.remaining);
    }
    return payload;
  });
}

/**
 * An extra budget for one route, on top of the per-IP budgets above: `max` requests per
 * `windowMs` for each `key(request)` (e.g. `pay:<token>`), in the same store (Redis when
 * REDIS_URL is set). Returns a check for the route's handler that throws the 429
 * (`rate_limit_error`, Retry-After in seconds) once the key's budget is spent; it lets every
 * request through when limits are off (RATE_LIMIT_MAX=0) or the store fails (logged). Call
 * after registerRateLimits, with the plugin context the route lives in.
 */
export function routeBudget(
  app: FastifyInstance,
  options: { max: number; windowMs: number; key: (request: FastifyRequest) => string },
): (request: FastifyRequest, reply: FastifyReply) => Promise<void> {
  if (!app.hasDecorator('createRateLimit')) return async () => {};
  const limiter = app.createRateLimit({ max: options.max, timeWindow: options.windowMs, keyGenerator: options.key });
  return async (request, reply) => {
    let result: LimitResult;
    try {
      result = await limiter(request);
    } catch (error) {
      request.log.warn({ err: error }, 'rate limits: the store failed; the request is let through');
      return;
    }
    if (result.isAllowed === false && result.isExceeded) throw tooManyRequests(reply, result);
  };
}
