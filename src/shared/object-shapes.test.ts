// The generated object builders: exactly the keys asked, in order, whatever characters a key
// holds (a key is quoted into the generated literal, never run), and `__proto__` refused.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { arrayToObject, keyPicker } from './object-shapes.ts';

const HOSTILE_KEYS = [
  'plain',
  'with space',
  '"); globalThis.pwned = true; ("',
  "'quote'",
  'back\\slash',
  'line\nbreak',
  'sep\u2028arator',
  '\u0000nul',
  '${template}',
  '日本語',
  '',
  'constructor',
  'toString',
  '123',
];

test('keyPicker takes exactly its keys, in order, from any source; hostile key text stays a key', () => {
  const pick = keyPicker(HOSTILE_KEYS);
  const source: Record<string, unknown> = Object.fromEntries(HOSTILE_KEYS.map((key, i) => [key, i]));
  source.extra = 'dropped';
  const picked = pick(source);
  assert.deepEqual(Object.keys(picked).sort(), [...HOSTILE_KEYS].sort());
  for (const [i, key] of HOSTILE_KEYS.entries()) assert.equal(picked[key], i);
  assert.equal('extra' in picked, false);
  assert.equal((globalThis as Record<string, unknown>).pwned, undefined);
  assert.equal(Object.getPrototypeOf(picked), Object.prototype);
  // An absent key is present and undefined, as the loop it replaces made it.
  const partial = keyPicker(['a', 'b'])({ a: 1 });
  assert.deepEqual(Object.entries(partial), [
    ['a', 1],
    ['b', undefined],
  ]);
  // Named keys keep the order they were listed in.
  assert.deepEqual(Object.keys(keyPicker(['z', 'a', 'm'])({ a: 1, m: 2, z: 3 })), ['z', 'a', 'm']);
});

test('arrayToObject maps values by position; a repeated key keeps its last value', () => {
  const build = arrayToObject(['id', 'amount', 'id', 'note']);
  assert.deepEqual(build(['first', 5, 'second', null]), { id: 'second', amount: 5, note: null });
  assert.deepEqual(Object.keys(build([1, 2, 3, 4])), ['id', 'amount', 'note']);
  const hostile = arrayToObject(HOSTILE_KEYS)(HOSTILE_KEYS.map((_, i) => i));
  for (const [i, key] of HOSTILE_KEYS.entries()) assert.equal(hostile[key], i);
  assert.equal((globalThis as Record<string, unknown>).pwned, undefined);
});

test('a key named __proto__ is refused (it would set the prototype)', () => {
  assert.throws(() => keyPicker(['a', '__proto__']), /__proto__/);
  assert.throws(() => arrayToObject(['__proto__']), /__proto__/);
});
