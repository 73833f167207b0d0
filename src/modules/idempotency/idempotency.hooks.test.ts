// Idempotency keys (SPEC §2), over HTTP against the real app, on SQLite and PostgreSQL.
import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import { sql } from 'kysely';
import { ADMIN_KEY, buildTestApp, type TestApp, connectSecondInstance } from '../../../test/helpers/app.ts';
import { ON_POSTGRES } from '../../../test/helpers/database.ts';
import { createCustomer, createSubscription } from '../../../test/helpers/factories.ts';
import { SHARED_SCHEMA_COMPILERS } from '../../../test/helpers/schema-compilers.ts';
import { buildApp } from '../../app.ts';
import { authenticateKey } from '../api-keys/api-keys.service.ts';
import { purgeIdempotencyKeys } from '../../worker/idempotency.jobs.ts';
import {
  IDEMPOTENCY_LEASE_MS,
  IDEMPOTENCY_TTL_MS,
  MAX_FINGERPRINT_DEPTH,
  requestFingerprint,
} from './idempotency.hooks.ts';

const SECOND_KEY = 'test_second_key_0123456789abcdef';

let sequence = 0;
const uniqueEmail = () => `idem${++sequence}.${Date.now()}@example.com`;

function withKey(key: string, options: Parameters<TestApp['request']>[2] = {}) {
  return { ...options, headers: { ...options.headers, 'idempotency-key': key } };
}

async function countCustomers(app: TestApp): Promise<number> {
  const res = await app.request('GET', '/api/customers');
  return res.body.meta.total;
}

async function countEvents(app: TestApp, topic: string): Promise<number> {
  const res = await app.request('GET', `/api/events?topic=${topic}`);
  return res.body.meta.total;
}

async function rowsOf(app: TestApp) {
  return app.deps.db.selectFrom('idempotency_keys').selectAll().execute();
}

test('a POST retried with the same key runs once; the retry gets the first status and body, marked replayed', async (t) => {
  const app = await buildTestApp(t);
  const body = { email: uniqueEmail(), name: 'Ada' };
  const first = await app.request('POST', '/api/customers', withKey('create-ada', { body }));
  assert.equal(first.status, 201);
  assert.equal(first.headers.get('idempotent-replayed'), null);

  const again = await app.request('POST', '/api/customers', withKey('create-ada', { body }));
  assert.equal(again.status, 201);
  assert.equal(again.headers.get('idempotent-replayed'), 'true');
  assert.equal(again.text, first.text);
  assert.match(again.headers.get('content-type') ?? '', /application\/json/);
  assert.equal(await countCustomers(app), 1);
  assert.equal(await countEvents(app, 'customer.created'), 1);
});

test('the same key with another body or another path is 409 idempotency_error', async (t) => {
  const app = await buildTestApp(t);
  const email = uniqueEmail();
  assert.equal((await app.request('POST', '/api/customers', withKey('k1', { body: { email } }))).status, 201);

  const otherBody = await app.request('POST', '/api/customers', withKey('k1', { body: { email: uniqueEmail() } }));
  assert.equal(otherBody.status, 409);
  assert.equal(otherBody.body.code, 'idempotency_error');
  assert.equal(otherBody.body.details, null);
  assert.equal(otherBody.headers.get('idempotent-replayed'), null);

  const plan = { name: 'Basic', amount: 1000, currency: 'NGN', interval: 'month' };
  const otherPath = await app.request('POST', '/api/plans', withKey('k1', { body: plan }));
  assert.equal(otherPath.status, 409);
  assert.equal(otherPath.body.code, 'idempotency_error');
  assert.equal(await countCustomers(app), 1);
});

test('the fingerprint covers method, path and body, not key order or whitespace', () => {
  const base = requestFingerprint('POST', '/api/customers', { email: 'a@x.io', name: 'A' });
  assert.equal(requestFingerprint('POST', '/api/customers', { name: 'A', email: 'a@x.io' }), base);
  assert.notEqual(requestFingerprint('PUT', '/api/customers', { email: 'a@x.io', name: 'A' }), base);
  assert.notEqual(requestFingerprint('POST', '/api/plans', { email: 'a@x.io', name: 'A' }), base);
  assert.notEqual(requestFingerprint('POST', '/api/customers', { email: 'a@x.io' }), base);
  assert.notEqual(
    requestFingerprint('POST', '/api/customers', undefined),
    requestFingerprint('POST', '/api/customers', {}),
  );
});

test('a retry whose JSON differs only in key order and whitespace is a replay', async (t) => {
  const app = await buildTestApp(t);
  const email = uniqueEmail();
  const first = await app.request(
    'POST',
    '/api/customers',
    withKey('spacing', {
      rawBody: JSON.stringify({ email, name: 'B' }),
      headers: { 'content-type': 'application/json' },
    }),
  );
  assert.equal(first.status, 201);
  const again = await app.request(
    'POST',
    '/api/customers',
    withKey('spacing', {
      rawBody: `{ "name": "B",\n  "email": "${email}" }`,
      headers: { 'content-type': 'application/json' },
    }),
  );
  assert.equal(again.status, 201);
  assert.equal(again.headers.get('idempotent-replayed'), 'true');
});

test('keys are scoped per API key: another key may use the same Idempotency-Key', async (t) => {
  const app = await buildTestApp(t, { env: { API_KEYS: `${ADMIN_KEY},${SECOND_KEY}` } });
  const first = await app.request('POST', '/api/customers', withKey('shared', { body: { email: uniqueEmail() } }));
  const second = await app.request(
    'POST',
    '/api/customers',
    withKey('shared', { key: SECOND_KEY, body: { email: uniqueEmail() } }),
  );
  assert.equal(first.status, 201);
  assert.equal(second.status, 201);
  assert.equal(second.headers.get('idempotent-replayed'), null);
  assert.notEqual(second.body.id, first.body.id);
});

test('an empty Idempotency-Key or one over 255 characters is 400; 255 characters is accepted', async (t) => {
  const app = await buildTestApp(t);
  for (const key of ['', 'k'.repeat(256)]) {
    const res = await app.request('POST', '/api/customers', withKey(key, { body: { email: uniqueEmail() } }));
    assert.equal(res.status, 400, `key of ${key.length} characters`);
    assert.equal(res.body.code, 'validation_error');
    assert.equal(res.body.title, 'Bad Request');
    assert.deepEqual(res.body.errors, [{ name: 'Idempotency-Key', reason: res.body.message }]);
  }
  assert.equal(await countCustomers(app), 0);
  const longest = await app.request(
    'POST',
    '/api/customers',
    withKey('k'.repeat(255), { body: { email: uniqueEmail() } }),
  );
  assert.equal(longest.status, 201);
});

test('a body too deeply nested to fingerprint is 400, not a 500 (routes without a body schema accept any JSON)', async (t) => {
  const app = await buildTestApp(t);
  const depth = 100_000;
  const deep = `${'['.repeat(depth)}${']'.repeat(depth)}`;
  const options = withKey('deep', { rawBody: deep, headers: { 'content-type': 'application/json' } });
  const res = await app.request('POST', '/api/webhooks/we_01M801QC8PV2WCTQ4YQCY2Y7BP/test', options);
  assert.equal(res.status, 400);
  assert.equal(res.body.code, 'validation_error');
  assert.equal((await rowsOf(app)).length, 0);
  // Nesting within the limit is fingerprinted as before.
  assert.match(
    requestFingerprint(
      'POST',
      '/x',
      JSON.parse(`${'['.repeat(MAX_FINGERPRINT_DEPTH)}${']'.repeat(MAX_FINGERPRINT_DEPTH)}`),
    ),
    /^[0-9a-f]{64}$/,
  );
});

test('GET, PATCH and DELETE ignore Idempotency-Key (SPEC: POST and PUT carry it)', async (t) => {
  const app = await buildTestApp(t);
  const customer = await createCustomer(app);
  assert.equal((await app.request('GET', '/api/customers', withKey(''))).status, 200);
  const patched = await app.request('PATCH', `/api/customers/${customer.id}`, withKey('p', { body: { name: 'X' } }));
  assert.equal(patched.status, 200);
  const again = await app.request('PATCH', `/api/customers/${customer.id}`, withKey('p', { body: { name: 'Y' } }));
  assert.equal(again.status, 200);
  assert.equal(again.body.name, 'Y');
  assert.equal((await rowsOf(app)).length, 0);
});

test('a 4xx outcome is stored and replayed, even after the state that caused it changed', async (t) => {
  const app = await buildTestApp(t);
  const taken = await createCustomer(app);
  const first = await app.request('POST', '/api/customers', withKey('dup', { body: { email: taken.email } }));
  assert.equal(first.status, 409);
  assert.equal(first.body.code, 'conflict');
  assert.equal((await app.request('DELETE', `/api/customers/${taken.id}`)).status, 204);

  const again = await app.request('POST', '/api/customers', withKey('dup', { body: { email: taken.email } }));
  assert.equal(again.status, 409);
  assert.equal(again.headers.get('idempotent-replayed'), 'true');
  assert.equal(again.text, first.text);
});

test('a request refused as malformed (400) is not stored: the key may be reused with a fixed body', async (t) => {
  const app = await buildTestApp(t);
  const bad = await app.request('POST', '/api/customers', withKey('fix-me', { body: { name: 'no email' } }));
  assert.equal(bad.status, 400);
  const fixed = await app.request('POST', '/api/customers', withKey('fix-me', { body: { email: uniqueEmail() } }));
  assert.equal(fixed.status, 201);
  assert.equal(fixed.headers.get('idempotent-replayed'), null);
});

test('a 5xx is not stored: the retry with the same key runs the request', async (t) => {
  const app = await buildTestApp(t);
  const body = { email: uniqueEmail() };
  // Break the customers table so the create fails with 500 after the key was claimed.
  await sql`alter table customers rename to customers_away`.execute(app.deps.db);
  const failed = await app.request('POST', '/api/customers', withKey('flaky', { body }));
  await sql`alter table customers_away rename to customers`.execute(app.deps.db);
  assert.equal(failed.status, 500);
  assert.equal(failed.body.code, 'internal_error');
  assert.equal((await rowsOf(app)).length, 0, 'the claim was released');

  const retried = await app.request('POST', '/api/customers', withKey('flaky', { body }));
  assert.equal(retried.status, 201);
  assert.equal(retried.headers.get('idempotent-replayed'), null);
});

test('cancel replayed with the same key returns the first 200, not 409 (SPEC §4)', async (t) => {
  const app = await buildTestApp(t);
  const subscription = await createSubscription(app);
  const path = `/api/subscriptions/${subscription.id}/cancel`;
  const first = await app.request('PUT', path, withKey('cancel-1', { body: { comment: 'moving' } }));
  assert.equal(first.status, 200);
  assert.equal(first.body.status, 'cancelled');

  const replay = await app.request('PUT', path, withKey('cancel-1', { body: { comment: 'moving' } }));
  assert.equal(replay.status, 200);
  assert.equal(replay.headers.get('idempotent-replayed'), 'true');
  assert.deepEqual(replay.body, first.body);

  const fresh = await app.request('PUT', path, withKey('cancel-2', { body: { comment: 'moving' } }));
  assert.equal(fresh.status, 409);
  assert.equal(fresh.body.code, 'validation_error');
  assert.equal(await countEvents(app, 'subscription.cancelled'), 1);
});

test('an empty-bodied PUT …/cancel is replayed too', async (t) => {
  const app = await buildTestApp(t);
  const subscription = await createSubscription(app);
  const path = `/api/subscriptions/${subscription.id}/cancel`;
  const options = withKey('empty', { rawBody: '', headers: { 'content-type': 'application/json' } });
  const first = await app.request('PUT', path, options);
  assert.equal(first.status, 200);
  const again = await app.request('PUT', path, options);
  assert.equal(again.status, 200);
  assert.equal(again.headers.get('idempotent-replayed'), 'true');
});

/** Stores a `running` claim as another instance's in-flight first request would. */
async function claimElsewhere(app: TestApp, key: string, body: unknown, at: Date) {
  const principal = await authenticateKey(app.deps.db, app.clock, app.deps.bootstrapKeyHashes, ADMIN_KEY);
  assert.ok(principal);
  await app.deps.db
    .insertInto('idempotency_keys')
    .values({
      principal_id: principal.id,
      key,
      fingerprint: requestFingerprint('POST', '/api/customers', body),
      state: 'running',
      claim_token: 'elsewhere',
      response_status: null,
      response_content_type: null,
      response_body: null,
      locked_until: new Date(at.getTime() + IDEMPOTENCY_LEASE_MS).toISOString(),
      created_at: at.toISOString(),
      expires_at: new Date(at.getTime() + IDEMPOTENCY_TTL_MS).toISOString(),
    })
    .execute();
}

test('a retry while the first request is still running is 409; once its instance is presumed dead, it runs', async (t) => {
  const app = await buildTestApp(t);
  const body = { email: uniqueEmail() };
  await claimElsewhere(app, 'in-flight', body, app.clock.now());

  const during = await app.request('POST', '/api/customers', withKey('in-flight', { body }));
  assert.equal(during.status, 409);
  assert.equal(during.body.code, 'idempotency_error');
  assert.match(during.body.message, /still being processed/);
  assert.equal(await countCustomers(app), 0);

  app.clock.advance(IDEMPOTENCY_LEASE_MS);
  const after = await app.request('POST', '/api/customers', withKey('in-flight', { body }));
  assert.equal(after.status, 201);
  assert.equal(await countCustomers(app), 1);
});

test('after 24 h a key is new again; before, it is not', async (t) => {
  const app = await buildTestApp(t);
  assert.equal(
    (await app.request('POST', '/api/customers', withKey('daily', { body: { email: uniqueEmail() } }))).status,
    201,
  );
  app.clock.advance(IDEMPOTENCY_TTL_MS - 1);
  const late = await app.request('POST', '/api/customers', withKey('daily', { body: { email: uniqueEmail() } }));
  assert.equal(late.status, 409);
  app.clock.advance(1);
  const next = await app.request('POST', '/api/customers', withKey('daily', { body: { email: uniqueEmail() } }));
  assert.equal(next.status, 201);
  assert.equal(await countCustomers(app), 2);
});

test('the worker purges keys past their 24 h and keeps the others', async (t) => {
  const app = await buildTestApp(t);
  for (const key of ['old-1', 'old-2']) {
    await app.request('POST', '/api/customers', withKey(key, { body: { email: uniqueEmail() } }));
  }
  app.clock.advance(60 * 60 * 1000);
  await app.request('POST', '/api/customers', withKey('recent', { body: { email: uniqueEmail() } }));
  app.clock.advance(IDEMPOTENCY_TTL_MS - 60 * 60 * 1000);

  assert.equal(await purgeIdempotencyKeys.run(app.deps), 2);
  assert.deepEqual(
    (await rowsOf(app)).map((row) => row.key),
    ['recent'],
  );
  assert.equal(await purgeIdempotencyKeys.run(app.deps), 0);
});

/** A second instance of the service over the same database (its own pool on PostgreSQL). */
async function secondInstance(t: TestContext, app: TestApp): Promise<string> {
  let deps = app.deps;
  if (ON_POSTGRES) {
    deps = await connectSecondInstance(app);
    t.after(() => deps.close());
  }
  const other = await buildApp(deps, { schemaController: SHARED_SCHEMA_COMPILERS });
  await other.listen({ port: 0, host: '127.0.0.1' });
  t.after(() => other.close());
  const address = other.server.address();
  return `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
}

test('keys live in the database: a retry that lands on another instance is replayed', async (t) => {
  const app = await buildTestApp(t);
  const otherUrl = await secondInstance(t, app);
  const body = JSON.stringify({ email: uniqueEmail() });
  const headers = { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json', 'idempotency-key': 'x' };
  const first = await fetch(`${app.baseUrl}/api/customers`, { method: 'POST', headers, body });
  const again = await fetch(`${otherUrl}/api/customers`, { method: 'POST', headers, body });
  assert.equal(first.status, 201);
  assert.equal(again.status, 201);
  assert.equal(again.headers.get('idempotent-replayed'), 'true');
  assert.equal(await again.text(), await first.text());
  assert.equal(await countCustomers(app), 1);
});

test(
  'PostgreSQL: a duplicate sent while the first request is blocked is 409, then replays its 200',
  { skip: !ON_POSTGRES && 'PostgreSQL only (row locks)' },
  async (t) => {
    const app = await buildTestApp(t);
    const subscription = await createSubscription(app);
    const path = `/api/subscriptions/${subscription.id}/cancel`;
    // Hold the subscription's row lock from another connection so the first cancel waits in its handler.
    const holder = await connectSecondInstance(app, { sameClock: false });
    t.after(() => holder.close());
    let release!: () => void;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    let locked!: () => void;
    const isLocked = new Promise<void>((resolve) => {
      locked = resolve;
    });
    const holding = holder.db.transaction().execute(async (trx) => {
      await trx.selectFrom('subscriptions').select('id').where('id', '=', subscription.id).forUpdate().execute();
      locked();
      await released;
    });
    await isLocked;

    const first = app.request('PUT', path, withKey('blocked', { body: {} }));
    // Wait until the first request has claimed the key (it is then blocked on the row lock).
    while ((await rowsOf(app)).length === 0) await new Promise((resolve) => setImmediate(resolve));
    const duplicate = await app.request('PUT', path, withKey('blocked', { body: {} }));
    assert.equal(duplicate.status, 409);
    assert.equal(duplicate.body.code, 'idempotency_error');

    release();
    await holding;
    const done = await first;
    assert.equal(done.status, 200);
    const replay = await app.request('PUT', path, withKey('blocked', { body: {} }));
    assert.equal(replay.status, 200);
    assert.equal(replay.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(replay.body, done.body);
  },
);

test('responses that carry a new API key are never stored: Idempotency-Key is ignored there', async (t) => {
  const app = await buildTestApp(t);
  const body = { name: 'ci', scope: 'read' };
  const first = await app.request('POST', '/api/api-keys', withKey('new-key', { body }));
  const second = await app.request('POST', '/api/api-keys', withKey('new-key', { body }));
  assert.equal(first.status, 201);
  assert.equal(second.status, 201);
  assert.equal(second.headers.get('idempotent-replayed'), null);
  assert.notEqual(second.body.key, first.body.key);
  const rotated = await app.request('POST', `/api/api-keys/${first.body.id}/rotate`, withKey('rotate', { body: {} }));
  assert.equal(rotated.status, 201);
  const stored = await rowsOf(app);
  assert.equal(stored.length, 0);
  assert.ok(!JSON.stringify(stored).includes(first.body.key));
});
