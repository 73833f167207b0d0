// Security headers (@fastify/helmet) and no CORS: API responses can be neither run, framed
// nor sniffed; /docs gets exactly what its locally served Scalar page needs.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import { buildTestApp, type TestResponse } from '../../test/helpers/app.ts';

/** `content-security-policy` as directive → sources. */
function csp(res: TestResponse): Map<string, string[]> {
  const header = res.headers.get('content-security-policy') ?? '';
  return new Map(
    header
      .split(';')
      .map((part) => part.trim().split(/\s+/))
      .filter((words) => words[0])
      .map(([name, ...values]) => [name!, values]),
  );
}

function assertApiHeaders(res: TestResponse): void {
  const policy = csp(res);
  assert.deepEqual(policy.get('default-src'), ["'none'"]);
  assert.deepEqual(policy.get('frame-ancestors'), ["'none'"]);
  assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
  assert.equal(res.headers.get('x-frame-options'), 'DENY');
  assert.equal(res.headers.get('referrer-policy'), 'no-referrer');
  assert.match(res.headers.get('strict-transport-security') ?? '', /max-age=\d+/);
  assert.equal(res.headers.get('cross-origin-resource-policy'), 'same-origin');
  assert.equal(res.headers.get('x-powered-by'), null);
}

test('API responses carry the security headers, on success and on errors', async (t) => {
  const app = await buildTestApp(t);
  assertApiHeaders(await app.request('GET', '/api/customers'));
  assertApiHeaders(await app.request('GET', '/api/customers', { key: null }));
  assertApiHeaders(await app.request('GET', '/api/nowhere'));
  assertApiHeaders(await app.request('POST', '/api/customers', { body: {} }));
  assertApiHeaders(await app.request('GET', '/openapi.json', { key: null }));
});

test('no CORS: neither a preflight nor a cross-origin request gets Access-Control-Allow-*', async (t) => {
  const app = await buildTestApp(t);
  const origin = { origin: 'https://evil.example' };
  const preflight = await app.request('OPTIONS', '/api/customers', {
    key: null,
    headers: { ...origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization' },
  });
  assert.notEqual(preflight.status, 204);
  const simple = await app.request('GET', '/api/customers', { headers: origin });
  const spec = await app.request('GET', '/openapi.json', { key: null, headers: origin });
  for (const res of [preflight, simple, spec]) {
    for (const [name] of res.headers) assert.ok(!name.startsWith('access-control-'), `${name} is not sent`);
  }
});

test('/docs renders under a same-origin policy that allows exactly its own scripts', async (t) => {
  const app = await buildTestApp(t);
  const page = await app.request('GET', '/docs/', { key: null });
  assert.equal(page.status, 200);
  const policy = csp(page);
  const scriptSources = policy.get('script-src') ?? [];
  assert.ok(scriptSources.includes("'self'"));
  assert.ok(!scriptSources.includes("'unsafe-inline'") && !scriptSources.includes("'unsafe-eval'"));
  assert.deepEqual(policy.get('connect-src'), ["'self'"]);
  assert.deepEqual(policy.get('frame-ancestors'), ["'none'"]);

  // Every inline script is allowed by its hash; every external one comes from this origin.
  const inline = [...page.text.matchAll(/<script\b(?![^>]*\bsrc=)[^>]*>([\s\S]*?)<\/script>/gi)];
  assert.ok(inline.length > 0);
  for (const [, code] of inline) {
    const hash = `'sha256-${createHash('sha256')
      .update(code ?? '')
      .digest('base64')}'`;
    assert.ok(scriptSources.includes(hash), `inline script allowed by ${hash}`);
  }
  const external = [...page.text.matchAll(/<script\b[^>]*\bsrc="([^"]+)"/gi)].map((match) => match[1]!);
  assert.ok(external.length > 0);
  for (const src of external) {
    assert.ok(!/^(https?:)?\/\//.test(src), `${src} is served by this origin`);
    const script = await app.request('GET', new URL(src, `${app.baseUrl}/docs/`).pathname, { key: null });
    assert.equal(script.status, 200);
    assert.match(script.headers.get('content-type') ?? '', /javascript/);
  }
  // Nothing in the page asks the browser for another origin (no CDN fonts, no telemetry).
  assert.ok(!/https?:\/\//.test(page.text));
  assert.match(page.text, /"withDefaultFonts":\s*false/);
});

/** Every header helmet (with our options) sends, as it sent them before they were computed once. */
const HELMET_COMMON = {
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
  'origin-agent-cluster': '?1',
  'referrer-policy': 'no-referrer',
  'strict-transport-security': 'max-age=31536000; includeSubDomains',
  'x-content-type-options': 'nosniff',
  'x-dns-prefetch-control': 'off',
  'x-download-options': 'noopen',
  'x-frame-options': 'DENY',
  'x-permitted-cross-domain-policies': 'none',
  'x-xss-protection': '0',
};
const OTHER_HEADERS = new Set([
  'content-type',
  'content-length',
  'date',
  'connection',
  'keep-alive',
  'x-request-id',
  'location',
  'transfer-encoding',
]);

function securityHeaders(res: TestResponse): Record<string, string> {
  return Object.fromEntries([...res.headers].filter(([name]) => !OTHER_HEADERS.has(name)));
}

test('the headers are exactly the set @fastify/helmet sends: API routes, unknown routes, /docs', async (t) => {
  const app = await buildTestApp(t);
  const api = {
    'content-security-policy': "default-src 'none';frame-ancestors 'none';base-uri 'none';form-action 'none'",
    ...HELMET_COMMON,
  };
  assert.deepEqual(securityHeaders(await app.request('GET', '/api/customers')), api);
  assert.deepEqual(securityHeaders(await app.request('GET', '/api/customers/cus_nope')), api);
  assert.deepEqual(securityHeaders(await app.request('GET', '/api/nowhere', { key: null })), api);
  const redirect = await fetch(`${app.baseUrl}/docs`, { redirect: 'manual' });
  await redirect.arrayBuffer();
  assert.deepEqual(securityHeaders({ status: redirect.status, headers: redirect.headers, body: undefined, text: '' }), {
    'content-security-policy':
      "default-src 'self';script-src 'self';style-src 'self' 'unsafe-inline';img-src 'self' data:;" +
      "font-src 'self' data:;connect-src 'self';object-src 'none';frame-ancestors 'none';base-uri 'self';form-action 'self'",
    ...HELMET_COMMON,
  });
});
