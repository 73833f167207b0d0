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
