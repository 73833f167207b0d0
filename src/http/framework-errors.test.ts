// Requests the router or Node's HTTP parser refuses are answered like every other error:
// the envelope, the security headers and X-Request-Id, never Fastify's own shape or the
// raw path. Sent with node:http so the bad URL goes out byte for byte (fetch normalises it).
import assert from 'node:assert/strict';
import http from 'node:http';
import { test } from 'node:test';
import { ADMIN_KEY, buildTestApp } from '../../test/helpers/app.ts';
import { PROVIDER_ENV } from '../../test/helpers/provider-events.ts';

interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
}

function rawRequest(
  baseUrl: string,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: string,
): Promise<RawResponse> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const request = http.request({ host: hostname, port, method, path, headers, agent: false }, (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (text += chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, text }));
    });
    request.on('error', reject);
    request.end(body);
  });
}

function assertAnsweredByTheApp(res: RawResponse, label: string) {
  assert.match(String(res.headers['content-type']), /^application\/json/, label);
  const body = JSON.parse(res.text);
  assert.equal(body.code, 'validation_error', label);
  assert.equal(typeof body.message, 'string', label);
  assert.equal(body.details, null, label);
  assert.doesNotMatch(res.text, /FST_ERR|statusCode|"error"/, `${label}: not Fastify's shape`);
  assert.equal(res.headers['x-content-type-options'], 'nosniff', `${label}: security headers`);
  assert.match(String(res.headers['content-security-policy']), /default-src 'none'/, label);
  assert.ok(res.headers['x-request-id'], `${label}: X-Request-Id`);
  return body;
}

test('a path the router cannot decode is 400 validation_error in the envelope, with every hook, never echoing the path', async (t) => {
  const { baseUrl } = await buildTestApp(t, { env: PROVIDER_ENV });
  const auth = { authorization: `Bearer ${ADMIN_KEY}` };
  const json = { 'content-type': 'application/json' };
  for (const [method, path, headers, body] of [
    ['GET', '/api/customers/%ff%fe', auth],
    ['GET', '/api/customers/%', auth],
    ['GET', '/api/customers/%', {}],
    ['POST', '/api/notify%ff?p=paystack', json, '{"event":"charge.success"}'],
    ['POST', '/api/customers/%zz', { ...auth, ...json }, '{}'],
  ] as const) {
    const label = `${method} ${path}`;
    const res = await rawRequest(baseUrl, method, path, { ...headers, 'x-request-id': 'bad-url-1' }, body);
    assert.equal(res.status, 400, label);
    const parsed = assertAnsweredByTheApp(res, label);
    assert.equal(parsed.message, 'the request path is not a valid URL (malformed percent-encoding)');
    assert.equal(parsed.title, 'Bad Request', 'the two-shape 400 body (SPEC §2)');
    assert.equal(res.headers['x-request-id'], 'bad-url-1', 'the given request id is echoed');
    assert.doesNotMatch(res.text, /customers|notify|%/, `${label}: the path is not echoed`);
  }
});

test('an id of any length reaches its route: 5000 characters is 400 like 65, in the envelope with every hook', async (t) => {
  const { baseUrl } = await buildTestApp(t);
  const auth = { authorization: `Bearer ${ADMIN_KEY}` };
  for (const length of [65, 101, 5000]) {
    const res = await rawRequest(baseUrl, 'GET', `/api/customers/${'a'.repeat(length)}`, auth);
    assert.equal(res.status, 400, String(length));
    const body = assertAnsweredByTheApp(res, String(length));
    assert.equal(body.message, 'id must be at most 64 characters');
  }
  const withoutKey = await rawRequest(baseUrl, 'GET', `/api/customers/${'a'.repeat(5000)}`);
  assert.equal(withoutKey.status, 401, 'authentication still comes first');
});

test('request headers over 16 KiB (a huge URL) are 431 in the envelope, not Node’s or Fastify’s shape', async (t) => {
  const { baseUrl } = await buildTestApp(t);
  const res = await rawRequest(baseUrl, 'GET', `/api/customers/${'a'.repeat(20_000)}`);
  assert.equal(res.status, 431);
  assert.match(String(res.headers['content-type']), /^application\/json/);
  assert.deepEqual(JSON.parse(res.text), {
    code: 'validation_error',
    message: 'request headers (the URL included) must not exceed 16 KiB',
    details: null,
  });
  assert.equal(res.headers['x-content-type-options'], 'nosniff');
});
