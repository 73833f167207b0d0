// Rate limits (SPEC §1, §2) over HTTP against the real app: in memory, and in the real Redis
// on 127.0.0.1:6379 when it answers (each test under its own key prefix, so tests run in
// parallel and leave nothing behind).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { type TestContext, test } from 'node:test';
import { Redis } from 'ioredis';
import type { KyselyPlugin } from 'kysely';
import { ADMIN_KEY, buildTestApp, type TestApp, type TestResponse } from '../../test/helpers/app.ts';
import { REDIS_URL, redisSkipReason } from '../../test/helpers/redis.ts';

const SECOND_KEY = 'test_second_key_0123456789abcdef';
const BAD_KEY = 'sk_not_a_key_that_exists_0000000';

const limited = (max: number, extra: Record<string, string> = {}) => ({
  env: { RATE_LIMIT_MAX: String(max), RATE_LIMIT_WINDOW: '1m', API_KEYS: `${ADMIN_KEY},${SECOND_KEY}`, ...extra },
});

function assertLimitHeaders(res: TestResponse, limit: number, remaining: number): void {
  assert.equal(res.headers.get('ratelimit-limit'), String(limit));
  assert.equal(res.headers.get('ratelimit-remaining'), String(remaining));
  const reset = Number(res.headers.get('ratelimit-reset'));
  assert.ok(reset >= 1 && reset <= 60, `RateLimit-Reset ${reset} is within the 1 m window`);
}

function assertTooMany(res: TestResponse, limit: number): void {
  assert.equal(res.status, 429);
  assert.equal(res.body.code, 'rate_limit_error');
  assert.equal(res.body.details, null);
  assert.equal(typeof res.body.message, 'string');
  assert.deepEqual(Object.keys(res.body).sort(), ['code', 'details', 'message']);
  const retryAfter = Number(res.headers.get('retry-after'));
  assert.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After ${retryAfter}`);
  assertLimitHeaders(res, limit, 0);
}

/** Counts every query the app's database handle runs from now on (the real database, observed). */
function countQueries(app: TestApp): () => number {
  let queries = 0;
  const counter: KyselyPlugin = {
    transformQuery: (args) => {
      queries += 1;
      return args.node;
    },
    transformResult: async (args) => args.result,
  };
  app.deps.db = app.deps.db.withPlugin(counter);
  return () => queries;
}

test('authenticated routes: RATE_LIMIT_MAX per window per API key, with RateLimit-* headers, then 429', async (t) => {
  const app = await buildTestApp(t, limited(3));
  for (let i = 0; i < 3; i++) {
    const res = await app.request('GET', '/api/customers');
    assert.equal(res.status, 200);
    assertLimitHeaders(res, 3, 2 - i);
  }
  assertTooMany(await app.request('GET', '/api/customers'), 3);
  assertTooMany(await app.request('POST', '/api/customers', { body: { email: 'x@example.com' } }), 3);

  const other = await app.request('GET', '/api/customers', { key: SECOND_KEY });
  assert.equal(other.status, 200, 'each API key has its own budget');
  assertLimitHeaders(other, 3, 2);
});

test('public routes: ×10 per client IP, shared by every public path and unknown routes, apart from keyed traffic', async (t) => {
  const app = await buildTestApp(t, limited(1));
  for (let i = 0; i < 8; i++) {
    const res = await app.request('GET', '/api/health', { key: null });
    assert.equal(res.status, 200);
    assertLimitHeaders(res, 10, 9 - i);
  }
  const spec = await app.request('GET', '/openapi.json', { key: null });
  assert.equal(spec.status, 200);
  assertLimitHeaders(spec, 10, 1);
  const unknown = await app.request('GET', '/api/nowhere', { key: null });
  assert.equal(unknown.status, 404);
  assertLimitHeaders(unknown, 10, 0);
  assertTooMany(await app.request('GET', '/api/health', { key: null }), 10);
  assertTooMany(await app.request('GET', '/docs/', { key: null }), 10);

  const keyed = await app.request('GET', '/api/customers');
  assert.equal(keyed.status, 200, 'keyed requests spend the key budget, not the IP budget');
  assertLimitHeaders(keyed, 1, 0);
});

test('a flood of bad keys is limited per IP before any database lookup', async (t) => {
  const app = await buildTestApp(t, limited(1));
  const queries = countQueries(app);
  for (let i = 0; i < 10; i++) {
    const res = await app.request('GET', '/api/customers', { key: `${BAD_KEY}${i}` });
    assert.equal(res.status, 401);
    assert.equal(res.text, '{"code":"authentication_error","message":"unauthorized","details":null}');
    assertLimitHeaders(res, 10, 9 - i);
  }
  const noKey = await app.request('GET', '/api/customers', { key: null });
  assertTooMany(noKey, 10);
  const looked = queries();
  assert.ok(looked >= 10, 'each bad key before the limit was looked up');

  for (let i = 0; i < 5; i++) assertTooMany(await app.request('GET', '/api/customers', { key: `${BAD_KEY}x${i}` }), 10);
  assert.equal(queries(), looked, 'no lookup once the IP budget is spent');
  // The budget is the IP's: a good key from the same address waits too (shared NAT, say).
  assertTooMany(await app.request('GET', '/api/customers'), 10);
  // Public routes keep their own IP budget.
  const health = await app.request('GET', '/api/health', { key: null });
  assert.equal(health.status, 200);
  assertLimitHeaders(health, 10, 9);
});

/**
 * 400 bad keys at once from one IP with RATE_LIMIT_MAX=5 (failed-auth budget 50), spread over
 * `apps` (instances): each request takes its slot before the lookup, so only what is left of
 * the budget is looked up (401) and the rest are 429.
 */
async function floodOfBadKeys(apps: TestApp[], left: number): Promise<void> {
  const counters = apps.map(countQueries);
  const results = await Promise.all(
    Array.from({ length: 400 }, (_, i) =>
      apps[i % apps.length]!.request('GET', '/api/customers', { key: `${BAD_KEY}${i}` }),
    ),
  );
  const statuses = results.map((res) => res.status);
  assert.equal(statuses.filter((s) => s === 401).length, left);
  assert.equal(statuses.filter((s) => s === 429).length, 400 - left);
  const lookups = counters.reduce((sum, queries) => sum + queries(), 0);
  assert.ok(lookups <= left, `${lookups} key lookups reached the database; ${left} were left of the budget`);
}

test('a burst of bad keys: at most the failed-auth budget reaches the key lookup', async (t) => {
  const app = await buildTestApp(t, limited(5));
  // Good keys hold a slot only while they are looked up, then give it back.
  for (let i = 0; i < 5; i++) assert.equal((await app.request('GET', '/api/customers')).status, 200);
  const first = await app.request('GET', '/api/customers', { key: BAD_KEY });
  assert.equal(first.status, 401);
  assertLimitHeaders(first, 50, 49);
  await floodOfBadKeys([app], 49);
});

test('a 403 (known key, scope too small) spends the key budget', async (t) => {
  const app = await buildTestApp(t, limited(2));
  const created = await app.request('POST', '/api/api-keys', { body: { name: 'reader', scope: 'read' } });
  assert.equal(created.status, 201);
  const reader = created.body.key as string;
  const body = { email: 'r@example.com' };
  const first = await app.request('POST', '/api/customers', { key: reader, body });
  assert.equal(first.status, 403);
  assertLimitHeaders(first, 2, 1);
  const second = await app.request('POST', '/api/customers', { key: reader, body });
  assert.equal(second.status, 403);
  assertLimitHeaders(second, 2, 0);
  assertTooMany(await app.request('GET', '/api/customers', { key: reader }), 2);
});

test('RATE_LIMIT_MAX=0 turns limiting off: no 429, no RateLimit headers', async (t) => {
  const app = await buildTestApp(t, { env: { RATE_LIMIT_MAX: '0', RATE_LIMIT_WINDOW: '1m' } });
  for (let i = 0; i < 25; i++) {
    const [keyed, open, bad] = await Promise.all([
      app.request('GET', '/api/customers'),
      app.request('GET', '/api/health', { key: null }),
      app.request('GET', '/api/customers', { key: BAD_KEY }),
    ]);
    assert.deepEqual([keyed.status, open.status, bad.status], [200, 200, 401]);
    assert.equal(keyed.headers.get('ratelimit-limit'), null);
    assert.equal(open.headers.get('ratelimit-limit'), null);
  }
});

const noRedis = await redisSkipReason();

/** A REDIS_URL with a key prefix of its own; the test's keys are deleted afterwards. */
function redisUrlFor(t: TestContext): string {
  const prefix = `test-${randomBytes(6).toString('hex')}:`;
  t.after(async () => {
    const redis = new Redis(REDIS_URL);
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length > 0) await redis.del(...keys);
    await redis.quit();
  });
  return `${REDIS_URL}/0?keyPrefix=${prefix}`;
}

test('with REDIS_URL, instances share one budget per key and per IP', { skip: noRedis }, async (t) => {
  const env = { REDIS_URL: redisUrlFor(t) };
  const a = await buildTestApp(t, limited(3, env));
  const b = await buildTestApp(t, limited(3, env));
  assertLimitHeaders(await a.request('GET', '/api/customers'), 3, 2);
  assertLimitHeaders(await b.request('GET', '/api/customers'), 3, 1);
  assertLimitHeaders(await a.request('GET', '/api/customers'), 3, 0);
  assertTooMany(await b.request('GET', '/api/customers'), 3);

  for (let i = 0; i < 15; i++) await (i % 2 ? a : b).request('GET', '/api/health', { key: null });
  assertLimitHeaders(await a.request('GET', '/api/health', { key: null }), 30, 14);
});

test(
  'with REDIS_URL, a flood of bad keys across instances is refused before any lookup',
  { skip: noRedis },
  async (t) => {
    const env = { REDIS_URL: redisUrlFor(t) };
    const a = await buildTestApp(t, limited(1, env));
    const b = await buildTestApp(t, limited(1, env));
    for (let i = 0; i < 10; i++) {
      assert.equal((await (i % 2 ? a : b).request('GET', '/api/customers', { key: `${BAD_KEY}${i}` })).status, 401);
    }
    const queries = countQueries(b);
    assertTooMany(await b.request('GET', '/api/customers', { key: BAD_KEY }), 10);
    assert.equal(queries(), 0);
  },
);

test(
  'with REDIS_URL, a burst of bad keys across instances: at most the failed-auth budget reaches the key lookup',
  { skip: noRedis },
  async (t) => {
    const env = { REDIS_URL: redisUrlFor(t) };
    const a = await buildTestApp(t, limited(5, env));
    const b = await buildTestApp(t, limited(5, env));
    assert.equal((await a.request('GET', '/api/customers')).status, 200);
    assert.equal((await b.request('GET', '/api/customers', { key: SECOND_KEY })).status, 200);
    await floodOfBadKeys([a, b], 50);
  },
);

test('when Redis does not answer, requests are let through rather than refused', async (t) => {
  const app = await buildTestApp(t, limited(1, { REDIS_URL: 'redis://127.0.0.1:1' }));
  for (let i = 0; i < 3; i++) {
    const res = await app.request('GET', '/api/customers');
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('ratelimit-limit'), null);
  }
});
