import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp } from '../../test/helpers/app.ts';

test('a NUL character in a query, path or body value is a 400 naming the field, on both databases', async (t) => {
  const app = await buildTestApp(t);
  const cases: [string, string, string | undefined, string][] = [
    ['GET', '/api/subscriptions?customer_id=%00', undefined, 'customer_id'],
    ['GET', '/api/events?topic=a%00b', undefined, 'topic'],
    ['GET', '/api/customers/cus_%00', undefined, 'id'],
    ['POST', '/api/customers', '{"email":"nul@example.com","name":"a\\u0000b"}', 'name'],
    ['POST', '/api/customers', '{"email":"nul@example.com","metadata":{"k":"\\u0000"}}', 'metadata.k'],
  ];
  for (const [method, path, rawBody, field] of cases) {
    const res = await app.request(
      method,
      path,
      rawBody ? { rawBody, headers: { 'content-type': 'application/json' } } : {},
    );
    assert.equal(res.status, 400, `${method} ${path} ${res.text}`);
    assert.equal(res.body.code, 'validation_error');
    assert.deepEqual(
      res.body.errors.map((e: { name: string }) => e.name),
      [field],
      res.text,
    );
  }
  const list = await app.request('GET', '/api/customers');
  assert.equal(list.body.meta.total, 0, 'nothing was stored');
});
