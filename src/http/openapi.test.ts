import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp } from '../../test/helpers/app.ts';

test('/openapi.json is OpenAPI 3.1 with every API route, security schemes and error bodies', async (t) => {
  const { request } = await buildTestApp(t);
  const res = await request('GET', '/openapi.json', { key: null });
  assert.equal(res.status, 200);
  const doc = res.body;
  assert.equal(doc.openapi, '3.1.0');
  assert.deepEqual(Object.keys(doc.components.securitySchemes).sort(), ['apiKeyHeader', 'bearerAuth']);
  assert.ok(doc.components.schemas.Error);
  assert.ok(doc.components.schemas.ValidationError.properties.errors);
  for (const path of [
    '/api/health',
    '/api/customers',
    '/api/customers/{id}',
    '/api/events',
    '/api/events/{id}',
    '/api/api-keys',
  ]) {
    assert.ok(doc.paths[path], path);
  }
  const create = doc.paths['/api/customers'].post;
  assert.ok(create.requestBody.content['application/json'].schema.properties.email);
  assert.ok(create.responses['201']);
  assert.match(JSON.stringify(create.responses['400']), /ValidationError/);
  assert.match(JSON.stringify(create.responses['409']), /Error/);
  assert.ok(create.security.length > 0);
  assert.equal(doc.paths['/api/health'].get.security, undefined);
  assert.equal(doc.paths['/openapi.json'], undefined);
  const listParams = doc.paths['/api/customers'].get.parameters
    .filter((p: { in: string }) => p.in === 'query')
    .map((p: { name: string }) => p.name)
    .sort();
  assert.deepEqual(listParams, ['limit', 'page', 'sort_by', 'sort_order']);
});

test('/docs renders the API reference from /openapi.json without an API key', async (t) => {
  const { request } = await buildTestApp(t);
  const page = await request('GET', '/docs/', { key: null });
  assert.equal(page.status, 200);
  assert.match(page.headers.get('content-type') ?? '', /text\/html/);
  assert.match(page.text, /openapi\.json/);
  const script = await request('GET', '/docs/js/scalar.js', { key: null });
  assert.equal(script.status, 200);
});

test('/openapi.json documents the 429 of every API route and Idempotency-Key on keyed POST/PUT routes', async (t) => {
  const { request } = await buildTestApp(t);
  const doc = (await request('GET', '/openapi.json', { key: null })).body;
  for (const [path, operations] of Object.entries<Record<string, any>>(doc.paths)) {
    for (const [method, operation] of Object.entries<any>(operations)) {
      assert.match(JSON.stringify(operation.responses['429'] ?? null), /Error/, `${method} ${path} documents 429`);
      const idempotency = (operation.parameters ?? []).find((p: { name: string }) => p.name === 'idempotency-key');
      const keyed =
        (method === 'post' || method === 'put') &&
        operation.security !== undefined &&
        !path.startsWith('/api/api-keys');
      assert.equal(Boolean(idempotency), keyed, `${method} ${path}: Idempotency-Key documented iff keyed POST/PUT`);
      if (idempotency) assert.equal(idempotency.schema.maxLength, 255);
    }
  }
});
