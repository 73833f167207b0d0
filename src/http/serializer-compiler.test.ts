// The serializer compiler's pool cut: what a route reaches, and that it serializes as Fastify's
// default compiler does over the whole pool.
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { test } from 'node:test';
import { buildSerializer, reachableSchemas } from './serializer-compiler.ts';

const pool = {
  Money: { $id: 'Money', type: 'object', properties: { amount: { type: 'integer' }, currency: { type: 'string' } } },
  Line: { $id: 'Line', type: 'object', properties: { price: { $ref: 'Money#' }, note: { type: 'string' } } },
  Invoice: {
    $id: 'Invoice',
    type: 'object',
    properties: { lines: { type: 'array', items: { $ref: 'Line#' } }, total: { $ref: 'Money#/properties/amount' } },
  },
  Customer: { $id: 'Customer', type: 'object', properties: { email: { type: 'string' } } },
};
const route = {
  method: 'GET',
  url: '/invoices/:id',
  httpStatus: '200',
  schema: { type: 'object', properties: { data: { $ref: 'Invoice#' }, self: { $ref: '#/properties/data' } } },
};

test('a route reaches the schemas it references, through one another, and no others', () => {
  assert.deepEqual(Object.keys(reachableSchemas(route.schema, pool)).sort(), ['Invoice', 'Line', 'Money']);
  assert.deepEqual(reachableSchemas({ type: 'string' }, pool), {});
  assert.deepEqual(Object.keys(reachableSchemas({ $ref: 'Customer#' }, pool)), ['Customer']);
  assert.deepEqual(reachableSchemas({ $ref: 'Unknown#' }, pool), {}, 'a name nobody added reaches nothing');
});

test('serializes exactly as Fastify’s default compiler over the whole pool; a missing schema still fails the build', () => {
  const require = createRequire(import.meta.url);
  const fastifyDefault = (require('@fastify/fast-json-stringify-compiler') as () => typeof buildSerializer)();
  const body = {
    data: {
      lines: [{ price: { amount: 1250, currency: 'NGN', extra: 'dropped' }, note: 'Pro' }],
      total: 1250,
      secret: 'not in the schema',
    },
  };
  const ours = buildSerializer(pool, {})(route)(body);
  assert.equal(ours, fastifyDefault(pool, {})(route)(body));
  assert.equal(ours, '{"data":{"lines":[{"price":{"amount":1250,"currency":"NGN"},"note":"Pro"}],"total":1250}}');
  assert.throws(() => buildSerializer(pool, {})({ ...route, schema: { $ref: 'Nobody#' } }));
});
