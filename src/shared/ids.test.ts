import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ID_PREFIXES, type IdKind, isIdOf, newId } from './ids.ts';

test('every new id has its kind prefix and 26 Crockford base32 characters', () => {
  for (const kind of Object.keys(ID_PREFIXES) as IdKind[]) {
    const id = newId(kind);
    assert.ok(isIdOf(kind, id), id);
    assert.equal(id.length, ID_PREFIXES[kind].length + 27);
  }
  assert.equal(isIdOf('customer', newId('payment')), false);
});

test('ids sort by creation: strictly increasing within a millisecond and across many', () => {
  // Far more ids than the random pool holds (4 KiB = 256 ids' worth), so refills are crossed.
  const ids = Array.from({ length: 5000 }, () => newId('event'));
  for (let i = 1; i < ids.length; i += 1) assert.ok(ids[i - 1]! < ids[i]!, `${ids[i - 1]} < ${ids[i]}`);
  assert.equal(new Set(ids).size, ids.length);
});

test('the random part is drawn afresh for each millisecond: no two milliseconds share it', async () => {
  const randomParts = new Set<string>();
  let last = '';
  for (let i = 0; i < 20; i += 1) {
    await new Promise((resolve) => setTimeout(resolve, 2));
    const id = newId('payment');
    assert.ok(last < id);
    last = id;
    randomParts.add(id.slice(-16));
  }
  assert.equal(randomParts.size, 20);
});
