import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseListParams } from './lists.ts';

test('list defaults: page 0, limit 10, created_at desc', () => {
  assert.deepEqual(parseListParams({}), {
    page: 0,
    limit: 10,
    offset: 0,
    sortBy: 'created_at',
    sortOrder: 'desc',
  });
});

test('page: negative or not a number → 0; offset = page × limit', () => {
  assert.equal(parseListParams({ page: '-1' }).page, 0);
  assert.equal(parseListParams({ page: 'two' }).page, 0);
  assert.equal(parseListParams({ page: '1.5' }).page, 0);
  assert.equal(parseListParams({ page: '3', limit: '20' }).offset, 60);
});

test('limit: missing/invalid → 10, above 100 → 100', () => {
  assert.equal(parseListParams({ limit: '' }).limit, 10);
  assert.equal(parseListParams({ limit: 'ten' }).limit, 10);
  assert.equal(parseListParams({ limit: '0' }).limit, 10);
  assert.equal(parseListParams({ limit: '101' }).limit, 100);
  assert.equal(parseListParams({ limit: '25' }).limit, 25);
});
