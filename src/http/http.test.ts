import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import { ADMIN_KEY, buildTestApp } from '../../test/helpers/app.ts';
import { errorResponse } from './errors.ts';

test('unknown routes are 404 not_found in the envelope, with or without a key', async (t) => {
  const { request } = await buildTestApp(t);
  for (const key of [null, ADMIN_KEY]) {
    const res = await request('GET', '/api/nothing-here', { key });
    assert.equal(res.status, 404);
    assert.equal(res.body.code, 'not_found');
    assert.equal(res.body.details, null);
  }
  assert.equal((await request('DELETE', '/api/customers')).status, 404);
});

test('malformed JSON is 400 in the two-shape body and changes nothing', async (t) => {
  const { request } = await buildTestApp(t);
  for (const rawBody of ['{"email":', '{bad json}', 'null x', '{"__proto__":{"admin":true},"email":"p@x.io"}']) {
    const res = await request('POST', '/api/customers', {
      rawBody,
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(res.status, 400, rawBody);
    assert.equal(res.body.code, 'validation_error');
    assert.equal(res.body.title, 'Bad Request');
    assert.equal(res.body.status, 400);
    assert.doesNotMatch(res.text, /FST_|SyntaxError|at .*\.ts/);
  }
  assert.equal((await request('GET', '/api/customers')).body.meta.total, 0);
});

test('a key that could reach a prototype is 400 naming where it is, not "not valid JSON"', async (t) => {
  const { request } = await buildTestApp(t);
  for (const [rawBody, message, field] of [
    [
      '{"email":"p@x.io","metadata":{"__proto__":{"admin":"true"}}}',
      'metadata must not have the key "__proto__"',
      'metadata',
    ],
    ['{"__proto__":{"admin":true},"email":"p@x.io"}', 'request body must not have the key "__proto__"', undefined],
    [
      '{"email":"p@x.io","metadata":{"constructor":{"prototype":{"admin":"true"}}}}',
      'metadata must not have the key "constructor"',
      'metadata',
    ],
  ] as const) {
    const res = await request('POST', '/api/customers', { rawBody, headers: { 'content-type': 'application/json' } });
    assert.equal(res.status, 400, rawBody);
    assert.equal(res.body.code, 'validation_error');
    assert.equal(res.body.message, message);
    assert.equal(res.body.detail, message);
    assert.deepEqual(
      res.body.errors.map((e: { name: string }) => e.name),
      field === undefined ? [] : [field],
    );
  }
  assert.equal((await request('GET', '/api/customers')).body.meta.total, 0, 'nothing was created');
  // `constructor` alone is an ordinary key.
  const plain = await request('POST', '/api/customers', { body: { email: 'c@x.io', metadata: { constructor: 'x' } } });
  assert.equal(plain.status, 201, plain.text);
  assert.deepEqual(plain.body.metadata, { constructor: 'x' });
});

test('non-JSON bodies are 415; a missing body where one is needed is 400', async (t) => {
  const { request } = await buildTestApp(t);
  for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/xml']) {
    const res = await request('POST', '/api/customers', {
      rawBody: 'email=a@b.co',
      headers: { 'content-type': type },
    });
    assert.equal(res.status, 415, type);
    assert.equal(res.body.code, 'validation_error');
    assert.equal(res.body.details, null);
  }
  const empty = await request('POST', '/api/customers', {
    rawBody: '',
    headers: { 'content-type': 'application/json' },
  });
  assert.equal(empty.status, 400);
  assert.equal(empty.body.message, 'Request body must be an object');
  assert.equal((await request('GET', '/api/customers')).body.meta.total, 0);
});

test('bodies over 1 MiB are 413', async (t) => {
  const { request } = await buildTestApp(t);
  const rawBody = JSON.stringify({ email: 'big@example.com', name: 'x'.repeat(1024 * 1024) });
  const res = await request('POST', '/api/customers', {
    rawBody,
    headers: { 'content-type': 'application/json' },
  });
  assert.equal(res.status, 413);
  assert.equal(res.body.code, 'validation_error');
  assert.equal((await request('GET', '/api/customers')).body.meta.total, 0);
});

test('X-Request-Id is honoured when sane, generated otherwise, and always echoed', async (t) => {
  const { request } = await buildTestApp(t);
  const given = await request('GET', '/api/health', { headers: { 'x-request-id': 'req-abc.123' } });
  assert.equal(given.headers.get('x-request-id'), 'req-abc.123');
  const generated = await request('GET', '/api/health');
  assert.match(generated.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/);
  for (const hostile of ['a b "c"', 'x'.repeat(129), '{"level":60}']) {
    const res = await request('GET', '/api/customers', { headers: { 'x-request-id': hostile } });
    assert.match(res.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/, hostile);
  }
  const onError = await request('GET', '/api/customers/nope', { headers: { 'x-request-id': 'err-1' } });
  assert.equal(onError.headers.get('x-request-id'), 'err-1');
});

test('unexpected failures are 500 internal_error with no stack or SQL; health says 503', async (t) => {
  const { request, deps } = await buildTestApp(t);
  assert.deepEqual((await request('GET', '/api/health')).body.database, 'ok');
  await deps.database.close();
  const res = await request('GET', '/api/customers');
  assert.equal(res.status, 500);
  assert.deepEqual(res.body, { code: 'internal_error', message: 'internal server error', details: null });
  const health = await request('GET', '/api/health');
  assert.equal(health.status, 503);
  assert.equal(health.body.database, 'unavailable');
  assert.equal(health.body.status, 'degraded');
});

test('errorResponse never leaks an unexpected error message', () => {
  const { status, body } = errorResponse(new Error('syntax error at or near "selec" in select * from customers'));
  assert.equal(status, 500);
  assert.deepEqual(body, { code: 'internal_error', message: 'internal server error', details: null });
});

test('health is public and reports the version', async (t) => {
  const { request } = await buildTestApp(t);
  const res = await request('GET', '/api/health', { key: null });
  assert.equal(res.status, 200);
  assert.equal(res.body.status, 'ok');
  assert.equal(res.body.database, 'ok');
  assert.match(res.body.version, /^\d+\.\d+\.\d+/);
});

test('logs carry the request id and never the API key', async (t) => {
  let logs = '';
  const logStream = new Writable({
    write(chunk, _encoding, done) {
      logs += chunk.toString();
      done();
    },
  });
  const { request } = await buildTestApp(t, { logStream });
  await request('GET', '/api/customers', {
    headers: { 'x-request-id': 'log-check-1', authorization: `Bearer ${ADMIN_KEY}` },
  });
  await request('GET', '/api/customers', { headers: { 'x-api-key': ADMIN_KEY } });
  assert.match(logs, /log-check-1/);
  assert.doesNotMatch(logs, new RegExp(ADMIN_KEY));
});

test('at LOG_LEVEL=warn a request logs nothing until it fails; the failure carries its request id', async (t) => {
  let logs = '';
  const logStream = new Writable({
    write(chunk, _encoding, done) {
      logs += chunk.toString();
      done();
    },
  });
  const { request, deps } = await buildTestApp(t, { logStream, env: { LOG_LEVEL: 'warn' } });
  await request('GET', '/api/customers', { headers: { 'x-request-id': 'quiet-1' } });
  assert.equal(logs, '', 'no incoming/completed lines at warn');
  await deps.database.close();
  const failed = await request('GET', '/api/customers', { headers: { 'x-request-id': 'failing-1' } });
  assert.equal(failed.status, 500);
  const lines = logs
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as { reqId?: string; msg?: string; level: number });
  assert.deepEqual(
    lines.map((line) => [line.reqId, line.msg, line.level]),
    [['failing-1', 'request failed', 50]],
  );
  assert.doesNotMatch(logs, new RegExp(ADMIN_KEY));
});
