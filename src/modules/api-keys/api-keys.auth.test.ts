// The shared "requires an API key" suite (SPEC §2 Authentication): run over EVERY protected
// operation the running app documents in /openapi.json, so a new route is covered the day it
// is added. Plus the public routes, and the rule that keys never reach the logs.
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, test } from 'node:test';
import { ADMIN_KEY, buildTestApp, type TestApp } from '../../../test/helpers/app.ts';

const UNAUTHORIZED = '{"code":"authentication_error","message":"unauthorized","details":null}';

/** Operations SPEC §2 names public; every other documented operation must require a key. */
const PUBLIC_OPERATIONS = new Set(['GET /api/health', 'POST /api/notify']);

/**
 * Rate limiting is off so that the many keyless requests below only meet authentication;
 * test clocks are on so that every documented route is served (else their routes are 404).
 */
const ENV = { RATE_LIMIT_MAX: '0', TEST_CLOCKS: 'true' };

const ULID = '01JD3Q7Z8X9Y0A1B2C3D4E5F6G';
/** Id prefix (SPEC §2) for a path parameter, by the collection segment before it or its own name. */
const ID_PREFIX_BY_NAME: Record<string, string> = {
  customers: 'cus',
  plans: 'plan',
  subscriptions: 'sub',
  payments: 'pay',
  refunds: 're',
  cases: 'dun',
  dunning: 'dun',
  webhooks: 'we',
  events: 'evt',
  deliveries: 'del',
  delivery: 'del',
  'api-keys': 'key',
};

interface Operation {
  method: string;
  /** The OpenAPI path, e.g. `/api/customers/{id}`. */
  path: string;
  /** `path` with a plausible id for every parameter. */
  url: string;
  secured: boolean;
}

/** `/api/customers/{id}` → `/api/customers/cus_01JD…`; `{delivery_id}` → `del_01JD…`. */
function withPlausibleIds(path: string): string {
  const segments = path.split('/');
  return segments
    .map((segment, i) => {
      const param = /^\{(\w+)\}$/.exec(segment)?.[1];
      if (!param) return segment;
      const byName = ID_PREFIX_BY_NAME[param.replace(/_id$/, '')];
      const byCollection = ID_PREFIX_BY_NAME[segments[i - 1] ?? ''];
      return `${byName ?? byCollection ?? 'cus'}_${ULID}`;
    })
    .join('/');
}

async function documentedOperations(testApp: TestApp): Promise<Operation[]> {
  const res = await testApp.request('GET', '/openapi.json', { key: null });
  assert.equal(res.status, 200);
  const operations: Operation[] = [];
  for (const [path, item] of Object.entries(
    res.body.paths as Record<string, Record<string, { security?: unknown[] }>>,
  )) {
    for (const [method, operation] of Object.entries(item)) {
      if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue;
      const secured = Array.isArray(operation.security) && operation.security.length > 0;
      operations.push({ method: method.toUpperCase(), path, url: withPlausibleIds(path), secured });
    }
  }
  return operations;
}

function send(testApp: TestApp, op: Operation, headers: Record<string, string>) {
  const hasBody = op.method === 'POST' || op.method === 'PUT' || op.method === 'PATCH';
  return testApp.request(op.method, op.url, { key: null, headers, ...(hasBody ? { body: {} } : {}) });
}

const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

/** Requests that present no usable key: each must get exactly the contract's 401 body (SPEC §2). */
const UNUSABLE_CREDENTIALS: [string, Record<string, string>][] = [
  ['no key', {}],
  ['a wrong Bearer key', { authorization: 'Bearer bk_this_key_was_never_issued_0000' }],
  ['a wrong x-api-key', { 'x-api-key': 'bk_this_key_was_never_issued_0000' }],
  ['Basic with the admin key as user', { authorization: basic(ADMIN_KEY, '') }],
  ['Basic with the admin key as password', { authorization: basic('', ADMIN_KEY) }],
  ['the admin key without a scheme', { authorization: ADMIN_KEY }],
  ['an empty Bearer', { authorization: 'Bearer ' }],
];

describe('requires an API key', () => {
  test('every documented operation except the public ones declares security', async (t) => {
    const testApp = await buildTestApp(t, { env: ENV });
    const operations = await documentedOperations(testApp);
    const undeclared = operations.filter((op) => !op.secured && !PUBLIC_OPERATIONS.has(`${op.method} ${op.path}`));
    assert.deepEqual(
      undeclared.map((op) => `${op.method} ${op.path}`),
      [],
    );
    for (const known of ['POST /api/customers', 'GET /api/events/{id}', 'POST /api/api-keys/{id}/rotate']) {
      assert.ok(
        operations.some((op) => op.secured && `${op.method} ${op.path}` === known),
        `${known} is documented`,
      );
    }
  });

  test('every protected operation answers exactly the 401 body without a usable key', async (t) => {
    const testApp = await buildTestApp(t, { env: ENV });
    const operations = (await documentedOperations(testApp)).filter((op) => op.secured);
    assert.ok(operations.length > 0);
    for (const op of operations) {
      await t.test(`${op.method} ${op.path}`, async () => {
        for (const [label, headers] of UNUSABLE_CREDENTIALS) {
          const res = await send(testApp, op, headers);
          assert.equal(res.status, 401, `${label}: ${res.text}`);
          assert.equal(res.text, UNAUTHORIZED, label);
          assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
        }
        // The control: the same request with a valid key reaches the route (so the 401 above
        // came from authentication, not from a path that matches nothing).
        const admitted = await send(testApp, op, { authorization: `Bearer ${ADMIN_KEY}` });
        assert.notEqual(admitted.status, 401, admitted.text);
        assert.notEqual(admitted.body?.message?.startsWith?.('no route'), true, admitted.text);
      });
    }
  });

  test('the public routes answer without a key', async (t) => {
    const testApp = await buildTestApp(t, { env: ENV });
    const health = await testApp.request('GET', '/api/health', { key: null });
    assert.equal(health.status, 200);
    assert.equal(health.body.status, 'ok');
    const openapi = await testApp.request('GET', '/openapi.json', { key: null });
    assert.equal(openapi.status, 200);
    assert.equal(openapi.body.openapi, '3.1.0');
    const docs = await testApp.request('GET', '/docs/', { key: null });
    assert.equal(docs.status, 200);
    assert.match(docs.headers.get('content-type') ?? '', /^text\/html/);
  });

  test('a public route ignores a wrong key instead of refusing it', async (t) => {
    const testApp = await buildTestApp(t, { env: ENV });
    const res = await testApp.request('GET', '/api/health', { key: 'bk_this_key_was_never_issued_0000' });
    assert.equal(res.status, 200);
  });
});

describe('keys in logs', () => {
  test('no API key or Authorization header value ever appears in the logs', async (t) => {
    const chunks: string[] = [];
    const logStream = new Writable({
      write(chunk, _encoding, done) {
        chunks.push(String(chunk));
        done();
      },
    });
    const testApp = await buildTestApp(t, { env: ENV, logStream });
    const created = await testApp.request('POST', '/api/api-keys', {
      body: { name: 'logged?', scope: 'read' },
    });
    assert.equal(created.status, 201);
    const key: string = created.body.key;
    const wrongKey = 'bk_wrong_key_that_must_not_be_logged';
    const basicValue = basic(ADMIN_KEY, 'pw');

    await testApp.request('GET', '/api/customers', { headers: { authorization: `Bearer ${ADMIN_KEY}` } });
    await testApp.request('GET', '/api/customers', { key: null, headers: { 'x-api-key': ADMIN_KEY } });
    await testApp.request('GET', '/api/customers', { key });
    await testApp.request('GET', '/api/customers', { key: null, headers: { 'x-api-key': key } });
    await testApp.request('POST', '/api/customers', { key, body: { email: 'a@example.com' } }); // 403
    await testApp.request('POST', '/api/customers', { body: {} }); // 400
    await testApp.request('GET', '/api/customers', { key: wrongKey }); // 401
    await testApp.request('GET', '/api/customers', { key: null, headers: { authorization: basicValue } });
    await testApp.request('GET', '/api/health', { key });
    // Closing waits for every response to finish, so every request's log line is written.
    await testApp.app.close();

    const logs = chunks.join('');
    assert.match(logs, /"reqId"/, 'requests were logged at all');
    for (const secret of [ADMIN_KEY, key, wrongKey, basicValue, basicValue.slice('Basic '.length)]) {
      assert.ok(!logs.includes(secret), `the logs contain ${secret.slice(0, 12)}…`);
    }
  });

  test('a key a client wrongly puts in the query string is refused and not logged either', async (t) => {
    const chunks: string[] = [];
    const logStream = new Writable({
      write(chunk, _encoding, done) {
        chunks.push(String(chunk));
        done();
      },
    });
    const testApp = await buildTestApp(t, { env: ENV, logStream });
    const res = await testApp.request('GET', `/api/customers?limit=5&api_key=${ADMIN_KEY}`, { key: null });
    assert.equal(res.status, 401);
    await testApp.app.close();
    const logs = chunks.join('');
    assert.ok(!logs.includes(ADMIN_KEY), 'the logs contain the key from the query string');
    assert.match(logs, /limit=5/, 'other query parameters stay in the logs');
  });
});
