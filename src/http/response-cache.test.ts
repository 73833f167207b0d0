// Conditional GETs and the response cache (http/response-cache.ts, docs/SPEC.md "Caching and
// ETag"): never older than the last commit, from whichever writer; ETag/304 per RFC 9110;
// per-request headers, authentication and rate limits on every response, hit or not.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync, StatementSync } from 'node:sqlite';
import { type TestContext, test } from 'node:test';
import fc from 'fast-check';
import { sql } from 'kysely';
import { buildTestApp, connectSecondInstance, type TestApp, type TestAppOptions } from '../../test/helpers/app.ts';
import { ON_POSTGRES } from '../../test/helpers/database.ts';
import { createCustomer, createSubscription } from '../../test/helpers/factories.ts';
import { PROVIDER_ENV, paystackCharge, postPaystack } from '../../test/helpers/provider-events.ts';
import { applyFailedPayment, applySuccessfulPayment } from '../billing/subscription-payments.ts';
import { foldCountDeltas } from '../db/counts.ts';
import { JOBS } from '../worker/jobs.ts';
import { Worker } from '../worker/runner.ts';
import { etagOf, HitRateGuard, ifNoneMatchMatches, LruStore } from './response-cache.ts';

/** Both settings of the cache: every behaviour below must hold with it on and off. */
const SETTINGS = [
  { name: 'cache on', env: { RESPONSE_CACHE_MB: '16' } },
  { name: 'cache off (the default)', env: {} },
] as const;
/** The body cache is opt-in (RESPONSE_CACHE_MB=0 by default): the tests of its own behaviour turn it on. */
const CACHE_ON = { RESPONSE_CACHE_MB: '16' };

/** A temporary directory for a SQLite file database, removed after the test. */
function tempDir(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'billing-cache-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** An app over a database another connection can open (a file on SQLite). */
function sharedApp(t: TestContext, options: TestAppOptions = {}): Promise<TestApp> {
  return buildTestApp(t, { ...options, sqliteFile: join(tempDir(t), 'billing.db') });
}

async function total(app: TestApp, path = '/api/customers'): Promise<number> {
  const res = await app.request('GET', path);
  assert.equal(res.status, 200);
  return res.body.meta.total;
}

test('If-None-Match follows RFC 9110 §13.1.2: *, lists, weak comparison; a malformed field matches nothing', () => {
  const tag = '"abc"';
  const cases: [string, boolean][] = [
    ['*', true],
    [' * ', true],
    ['"abc"', true],
    ['W/"abc"', true],
    ['"x", "abc"', true],
    ['"x",W/"abc" , "y"', true],
    ['"x", ,"abc",', true],
    ['"abcd"', false],
    ['"ab,c"', false],
    ['"ab,c", "abc"', true],
    ['abc', false],
    ['"abc" "x"', false],
    ['"x", abc', false],
    ['w/"abc"', false],
    ['', false],
    ['*, "abc"', false],
  ];
  for (const [field, expected] of cases) assert.equal(ifNoneMatchMatches(field, tag), expected, field);
  assert.equal(ifNoneMatchMatches('"abc"', 'W/"abc"'), true, 'weak comparison on our side too');
});

test('the store keeps at most its byte budget, evicting the least recently used', () => {
  const store = new LruStore(8 * 1000);
  const entry = (n: number) => ({
    version: '1',
    body: Buffer.from('x'),
    etag: etagOf(String(n)),
    contentType: 'j',
    size: 1000,
  });
  for (let i = 0; i < 8; i += 1) store.set(`k${i}`, entry(i));
  assert.equal(store.size, 8);
  assert.ok(store.get('k0'), 'k0 used: now the most recent');
  store.set('k8', entry(8));
  assert.equal(store.size, 8);
  assert.equal(store.bytes, 8000);
  assert.equal(store.get('k1'), undefined, 'the least recently used went');
  assert.ok(store.get('k0'));
  store.set('k0', { ...entry(0), size: 1000 });
  assert.equal(store.bytes, 8000, 'replacing counts the entry once');
  store.set('huge', { ...entry(9), size: 1001 });
  assert.equal(store.get('huge'), undefined, 'an entry above an eighth of the budget is not stored');
});

/**
 * A subscription paid, then failed: past_due with an open dunning case, written the way the
 * worker and provider events write (service functions in a transaction, no HTTP request).
 * `beforeFailure` runs (e.g. reads) between the two.
 */
async function pastDueSubscription(app: TestApp, beforeFailure: () => Promise<void> = async () => {}) {
  const sub = await createSubscription(app);
  await app.deps.db.transaction().execute((trx) => applySuccessfulPayment(trx, app.deps, sub.id));
  await beforeFailure();
  await app.deps.db
    .transaction()
    .execute((trx) => applyFailedPayment(trx, app.deps, sub.id, { paymentId: null, amount: 5000, currency: 'NGN' }));
  return sub;
}

test('where most lookups miss, only one request in 16 looks up, until probes hit again', () => {
  const guard = new HitRateGuard();
  const lookUps = (requests: number, hit: boolean) => {
    let looked = 0;
    for (let i = 0; i < requests; i += 1) {
      if (!guard.shouldLookUp()) continue;
      looked += 1;
      guard.record(hit);
    }
    return looked;
  };
  assert.equal(lookUps(256, true), 256, 'hits: every request looks up');
  assert.equal(lookUps(52, true) + lookUps(204, false), 256);
  assert.equal(guard.probing, false, '52 of 256 is just above the 20% bar');
  assert.equal(lookUps(51, true) + lookUps(204, false), 255);
  assert.equal(guard.probing, false, 'a window is judged only once full');
  assert.equal(lookUps(1, false), 1);
  assert.equal(guard.probing, true, '51 of 256: under the bar');
  assert.equal(lookUps(1600, false), 100, 'probing: one request in 16');
  assert.equal(lookUps(16 * 156, true), 156);
  assert.equal(guard.probing, false, 'a window whose probes hit turns lookups back on');
  assert.equal(lookUps(100, true), 100);
});

for (const setting of SETTINGS) {
  test(`${setting.name}: ETag stable while nothing changes, 304 on If-None-Match, 200 after a change`, async (t) => {
    const app = await buildTestApp(t, { env: setting.env });
    const customer = await createCustomer(app, { name: 'Ada' });
    for (const path of ['/api/customers', `/api/customers/${customer.id}`, '/api/customers?limit=5&sort_order=asc']) {
      const first = await app.request('GET', path);
      const second = await app.request('GET', path);
      assert.equal(first.status, 200);
      const etag = first.headers.get('etag');
      assert.match(etag ?? '', /^"[\w-]{22}"$/, path);
      assert.equal(second.headers.get('etag'), etag, `${path}: same data, same ETag`);
      assert.equal(second.text, first.text);
      assert.equal(etag, etagOf(first.text), 'the ETag is the hash of the body');
      assert.equal(first.headers.get('cache-control'), 'private, no-cache');

      for (const condition of [etag!, `W/${etag}`, `"nope", ${etag}`, '*']) {
        const res = await app.request('GET', path, {
          headers: { 'if-none-match': condition, 'x-request-id': 'req-304' },
        });
        assert.equal(res.status, 304, `${path} If-None-Match: ${condition}`);
        assert.equal(res.text, '');
        assert.equal(res.headers.get('etag'), etag);
        assert.equal(res.headers.get('content-type'), null);
        assert.equal(res.headers.get('content-length'), null);
        assert.equal(res.headers.get('cache-control'), 'private, no-cache');
        assert.equal(res.headers.get('x-request-id'), 'req-304', 'the request id is this request’s');
        assert.equal(res.headers.get('x-content-type-options'), 'nosniff', 'security headers on a 304');
      }
      const other = await app.request('GET', path, { headers: { 'if-none-match': '"nope"' } });
      assert.equal(other.status, 200);
      assert.equal(other.text, first.text);
    }
    const before = await app.request('GET', `/api/customers/${customer.id}`);
    const etag = before.headers.get('etag')!;
    const listEtag = (await app.request('GET', '/api/customers')).headers.get('etag')!;
    assert.equal(
      (await app.request('PATCH', `/api/customers/${customer.id}`, { body: { name: 'Grace' } })).status,
      200,
    );
    const after = await app.request('GET', `/api/customers/${customer.id}`, { headers: { 'if-none-match': etag } });
    assert.equal(after.status, 200, 'changed: the full response');
    assert.equal(after.body.name, 'Grace');
    assert.notEqual(after.headers.get('etag'), etag);
    const list = await app.request('GET', '/api/customers', { headers: { 'if-none-match': listEtag } });
    assert.equal(list.status, 200);
    assert.equal(list.body.data[0].name, 'Grace');
  });

  test(`${setting.name}: errors, public routes and writes carry no ETag; a 404 is never a 304`, async (t) => {
    const app = await buildTestApp(t, { env: setting.env });
    const missing = await app.request('GET', '/api/customers/cus_00000000000000000000000000', {
      headers: { 'if-none-match': '*' },
    });
    assert.equal(missing.status, 404);
    assert.equal(missing.headers.get('etag'), null);
    const health = await app.request('GET', '/api/health', { key: null });
    assert.equal(health.headers.get('etag'), null);
    const created = await app.request('POST', '/api/customers', { body: { email: 'etag@example.com' } });
    assert.equal(created.status, 201);
    assert.equal(created.headers.get('etag'), null);
    const unauthorized = await app.request('GET', '/api/customers', { key: null, headers: { 'if-none-match': '*' } });
    assert.equal(unauthorized.status, 401);
  });

  test(`${setting.name}: a write through the API, or on the service's own connection, is seen by the next read`, async (t) => {
    const app = await buildTestApp(t, { env: setting.env });
    assert.equal(await total(app), 0);
    for (let i = 1; i <= 3; i += 1) {
      await createCustomer(app);
      assert.equal(await total(app), i);
    }
    const [first] = (await app.request('GET', '/api/customers?sort_order=asc')).body.data;
    const path = `/api/customers/${first.id}`;
    assert.equal((await app.request('GET', path)).body.name, null);
    // A statement outside any transaction, on the app's own connection (or pool).
    await sql`update customers set name = 'raw' where id = ${first.id}`.execute(app.deps.db);
    assert.equal((await app.request('GET', path)).body.name, 'raw');
    // A transaction that rolls back changes nothing a read sees.
    await app.deps.db
      .transaction()
      .execute(async (trx) => {
        await sql`update customers set name = 'rolled back' where id = ${first.id}`.execute(trx);
        throw new Error('roll back');
      })
      .catch(() => {});
    assert.equal((await app.request('GET', path)).body.name, 'raw');
  });

  test(`${setting.name}: a write from another connection or instance is seen by the next read`, async (t) => {
    const app = await sharedApp(t, { env: setting.env });
    const customer = await createCustomer(app, { name: 'before' });
    const path = `/api/customers/${customer.id}`;
    assert.equal((await app.request('GET', path)).body.name, 'before');
    assert.equal(await total(app), 1);
    if (ON_POSTGRES) {
      const second = await connectSecondInstance(app);
      t.after(() => second.close());
      await sql`update customers set name = 'other pool' where id = ${customer.id}`.execute(second.db);
    } else {
      // Another connection to the same file, as another process would have.
      const other = new DatabaseSync(app.deps.config.database.kind === 'sqlite' ? app.deps.config.database.path : '');
      t.after(() => other.close());
      other.prepare('update customers set name = ? where id = ?').run('other pool', customer.id);
    }
    assert.equal((await app.request('GET', path)).body.name, 'other pool');

    // A full second instance: write through B, read through A at once (no waiting for any
    // notification): the read sees the write.
    const b = await buildTestApp(t, { env: setting.env, sameDatabaseAs: app });
    for (let i = 2; i <= 4; i += 1) {
      await createCustomer(b);
      assert.equal(await total(app), i, 'A sees B’s write');
      assert.equal(await total(b), i);
    }
    assert.equal((await b.request('PATCH', path, { body: { name: 'via B' } })).status, 200);
    assert.equal((await app.request('GET', path)).body.name, 'via B');
  });

  test(`${setting.name}: writes of the worker and of provider events are seen by the next read`, async (t) => {
    const app = await sharedApp(t, { env: { ...PROVIDER_ENV, ...setting.env } });
    assert.equal(await total(app, '/api/payments'), 0);
    const res = await postPaystack(app, paystackCharge({ email: 'payer@example.com' }));
    assert.equal(res.status, 200);
    assert.equal(await total(app, '/api/payments'), 1);
    assert.equal(await total(app), 1, 'the payer became a customer');

    // Kept totals: deltas another instance appended, folded by this worker (PostgreSQL).
    const second = await connectSecondInstance(app);
    t.after(() => second.close());
    await sql`update customers set name = 'folded' where email = 'payer@example.com'`.execute(second.db);
    await foldCountDeltas(app.deps.db);
    assert.equal(await total(app), 1);
    assert.equal((await app.request('GET', '/api/customers')).body.data[0].name, 'folded');

    // A worker-side move: a failed payment opens a dunning case (the kind of write jobs do).
    const sub = await pastDueSubscription(app, async () =>
      assert.equal((await app.request('GET', '/api/dunning/cases')).body.total, 0),
    );
    const cases = await app.request('GET', '/api/dunning/cases');
    assert.equal(cases.body.total, 1);
    assert.equal((await app.request('GET', `/api/subscriptions/${sub.id}`)).body.status, 'past_due');

    // A worker tick: the first reminder falls due after a day and the dunning job sends it.
    const path = `/api/dunning/cases/${cases.body.data[0].id}`;
    const stepsBefore = (await app.request('GET', path)).body.steps.length;
    app.clock.advance(86_400_000 + 60_000);
    assert.equal((await app.request('GET', path)).body.steps.length, stepsBefore, 'time alone changes nothing here');
    await new Worker(app.deps, JOBS, {
      error: (object: object) => assert.fail(String(Object.values(object)[0])),
    }).runOnce();
    assert.equal((await app.request('GET', path)).body.steps.length, stepsBefore + 1);
  });
}

test('a response that depends on the clock is never served from before the clock moved', async (t) => {
  const app = await buildTestApp(t, { env: CACHE_ON });
  await pastDueSubscription(app);
  const days = async () => (await app.request('GET', '/api/dunning/past-due')).body.data[0]?.days_overdue;
  const first = await days();
  assert.equal(await days(), first);
  app.clock.advance(2 * 86_400_000);
  assert.equal(await days(), first + 2, 'no write, but the clock moved');
  const upcoming = async () => (await app.request('GET', '/api/dunning/upcoming?within=1d')).body.total;
  assert.equal(await upcoming(), 1, 'the first reminder is due after one day: already overdue now');
});

test('authentication and rate limits run on every cached response; a revoked key is refused at once', async (t) => {
  const app = await buildTestApp(t, { env: { ...CACHE_ON, RATE_LIMIT_MAX: '4', RATE_LIMIT_WINDOW: '1m' } });
  const created = await app.request('POST', '/api/api-keys', { body: { name: 'reader', scope: 'read' } });
  assert.equal(created.status, 201);
  const key = created.body.key as string;
  const first = await app.request('GET', '/api/customers', { key });
  assert.equal(first.status, 200);
  assert.equal(first.headers.get('ratelimit-remaining'), '3');
  const second = await app.request('GET', '/api/customers', { key, headers: { 'x-request-id': 'second' } });
  assert.equal(second.status, 200);
  assert.equal(second.headers.get('ratelimit-remaining'), '2', 'a cached answer still spends the budget');
  assert.equal(second.headers.get('x-request-id'), 'second');
  const conditional = await app.request('GET', '/api/customers', {
    key,
    headers: { 'if-none-match': first.headers.get('etag')! },
  });
  assert.equal(conditional.status, 304);
  assert.equal(conditional.headers.get('ratelimit-remaining'), '1', 'a 304 spends it too');
  assert.equal((await app.request('GET', '/api/api-keys', { key })).status, 403, 'scopes still apply');
  assert.equal((await app.request('GET', '/api/customers', { key })).status, 429);

  const other = await app.request('POST', '/api/api-keys', { body: { name: 'revoked soon', scope: 'read' } });
  const doomed = other.body.key as string;
  assert.equal((await app.request('GET', '/api/plans', { key: doomed })).status, 200);
  assert.equal((await app.request('DELETE', `/api/api-keys/${other.body.id}`)).status, 200);
  const refused = await app.request('GET', '/api/plans', { key: doomed });
  assert.equal(refused.status, 401);
  assert.equal(refused.headers.get('etag'), null);
});

test('a route whose lookups all miss does not turn lookups off for a list that hits', async (t) => {
  // PostgreSQL's commit version is cluster-wide: the other tests' writes make the list miss too.
  if (ON_POSTGRES) return t.skip('SQLite: a commit version only this test moves'); // reason: PostgreSQL's version is cluster-wide
  const app = await buildTestApp(t, { env: CACHE_ON });
  await createCustomer(app);
  // Gets of ids that were never asked before: every lookup misses (more than a window's worth).
  for (let i = 0; i < 300; i += 1) {
    const id = `cus_${String(i).padStart(26, '0')}`;
    assert.equal((await app.request('GET', `/api/customers/${id}`)).status, 404);
  }
  await app.request('GET', '/api/customers'); // stored
  // Count what the list reads from the database: page statements (the version is read with `get`).
  let pages = 0;
  const all = StatementSync.prototype.all;
  StatementSync.prototype.all = function (this: StatementSync, ...args: unknown[]) {
    pages += 1;
    return (all as (...values: unknown[]) => ReturnType<typeof all>).apply(this, args);
  } as typeof all;
  t.after(() => {
    StatementSync.prototype.all = all;
  });
  const requests = 32;
  for (let i = 0; i < requests; i += 1) assert.equal((await app.request('GET', '/api/customers')).status, 200);
  StatementSync.prototype.all = all;
  assert.equal(pages, 0, 'every list request answered from the cache');
});

for (const setting of SETTINGS) {
  test(`${setting.name}: HEAD answers the GET’s ETag without a body, served from the cache or not`, async (t) => {
    const app = await buildTestApp(t, { env: setting.env });
    await createCustomer(app);
    const get = await app.request('GET', '/api/customers');
    for (let i = 0; i < 2; i += 1) {
      const head = await app.request('HEAD', '/api/customers');
      assert.equal(head.status, 200);
      assert.equal(head.text, '');
      assert.equal(head.headers.get('etag'), get.headers.get('etag'));
      assert.equal(head.headers.get('content-length'), String(Buffer.byteLength(get.text)));
    }
  });
}

test('interleaved writes from every writer: each read equals what an uncached instance answers', async (t) => {
  const cached = await sharedApp(t, { env: CACHE_ON });
  const uncached = await buildTestApp(t, { env: { RESPONSE_CACHE_MB: '0' }, sameDatabaseAs: cached });
  const second = await connectSecondInstance(cached);
  t.after(() => second.close());
  const ids: string[] = [];
  for (let i = 0; i < 3; i += 1) ids.push((await createCustomer(cached)).id);
  let n = 0;
  const name = () => `n${(n += 1)}`;
  const pick = (i: number) => ids[i % ids.length]!;

  type Step =
    | { kind: 'read'; path: number; conditional: boolean }
    | { kind: 'api'; app: 0 | 1; index: number }
    | { kind: 'own'; index: number }
    | { kind: 'other'; index: number }
    | { kind: 'create'; app: 0 | 1 };
  const paths = (i: number) =>
    [
      '/api/customers',
      '/api/customers?sort_order=asc',
      '/api/customers?limit=2&page=1',
      `/api/customers/${pick(i)}`,
      '/api/events?limit=3',
    ][i % 5]!;
  const step: fc.Arbitrary<Step> = fc.oneof(
    fc.record({ kind: fc.constant('read' as const), path: fc.nat(20), conditional: fc.boolean() }),
    fc.record({ kind: fc.constant('api' as const), app: fc.constantFrom(0 as const, 1 as const), index: fc.nat(20) }),
    fc.record({ kind: fc.constant('own' as const), index: fc.nat(20) }),
    fc.record({ kind: fc.constant('other' as const), index: fc.nat(20) }),
    fc.record({ kind: fc.constant('create' as const), app: fc.constantFrom(0 as const, 1 as const) }),
  );
  const etags = new Map<string, string>();
  await fc.assert(
    fc.asyncProperty(fc.array(step, { minLength: 5, maxLength: 25 }), async (steps) => {
      for (const s of steps) {
        if (s.kind === 'read') {
          const path = paths(s.path);
          const known = etags.get(path);
          const headers: Record<string, string> = s.conditional && known ? { 'if-none-match': known } : {};
          const got = await cached.request('GET', path, { headers });
          const truth = await uncached.request('GET', path);
          assert.equal(truth.status, 200);
          if (got.status === 304) {
            assert.equal(known, truth.headers.get('etag'), `${path}: 304 only while the body is unchanged`);
          } else {
            assert.equal(got.status, 200);
            assert.equal(got.text, truth.text, path);
            assert.equal(got.headers.get('etag'), truth.headers.get('etag'));
            if (known !== undefined && s.conditional) assert.notEqual(known, truth.headers.get('etag'));
          }
          etags.set(path, truth.headers.get('etag')!);
        } else if (s.kind === 'api') {
          const res = await [cached, uncached][s.app]!.request('PATCH', `/api/customers/${pick(s.index)}`, {
            body: { name: name() },
          });
          assert.equal(res.status, 200);
        } else if (s.kind === 'own') {
          await sql`update customers set name = ${name()} where id = ${pick(s.index)}`.execute(cached.deps.db);
        } else if (s.kind === 'other') {
          await sql`update customers set name = ${name()} where id = ${pick(s.index)}`.execute(second.db);
        } else {
          ids.push((await createCustomer([cached, uncached][s.app]!)).id);
        }
      }
    }),
    { numRuns: 15 },
  );
});

test('/openapi.json documents If-None-Match and the 304 on every keyed GET, and nowhere else', async (t) => {
  const app = await buildTestApp(t);
  const doc = (await app.request('GET', '/openapi.json', { key: null })).body;
  let documented = 0;
  for (const [path, operations] of Object.entries<Record<string, any>>(doc.paths)) {
    for (const [method, operation] of Object.entries<any>(operations)) {
      const keyed = (operation.security ?? []).length > 0; // public routes say `security: []`
      const conditional = method === 'get' && path.startsWith('/api/') && keyed;
      const header = (operation.parameters ?? []).find((p: { name: string }) => p.name === 'if-none-match');
      assert.equal(Boolean(operation.responses['304']), conditional, `${method} ${path}: 304 iff keyed GET`);
      assert.equal(Boolean(header), conditional, `${method} ${path}: If-None-Match iff keyed GET`);
      if (conditional) documented += 1;
    }
  }
  assert.ok(documented >= 20, `every list and get (${documented})`);
});
