import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import fc from 'fast-check';
import { DecryptionError, decryptSecret, encryptSecret, openSecret } from './encryption.ts';

const key = randomBytes(32);

test('any text comes back as it went in; the stored form never contains it', () => {
  fc.assert(
    fc.property(fc.string({ minLength: 4, unit: 'binary' }), (plaintext) => {
      const stored = encryptSecret(key, plaintext);
      assert.match(stored, /^v1\.[A-Za-z0-9_-]+$/);
      assert.ok(!stored.includes(plaintext));
      assert.equal(decryptSecret(key, stored), plaintext);
    }),
  );
});

test('the same secret encrypts differently each time (a fresh IV)', () => {
  assert.notEqual(encryptSecret(key, 'AUTH_abc'), encryptSecret(key, 'AUTH_abc'));
});

test('a wrong key, a changed byte or a foreign value is refused, never garbage', () => {
  const stored = encryptSecret(key, 'AUTH_8dfhjjdt');
  assert.throws(() => decryptSecret(randomBytes(32), stored), DecryptionError);
  const raw = Buffer.from(stored.slice(3), 'base64url');
  for (const index of [0, 12, 28, raw.length - 1]) {
    const altered = Buffer.from(raw);
    altered[index]! ^= 1;
    assert.throws(() => decryptSecret(key, `v1.${altered.toString('base64url')}`), DecryptionError, `byte ${index}`);
  }
  for (const foreign of ['', 'AUTH_8dfhjjdt', 'v1.', 'v1.AAAA', 'v2.' + stored.slice(3)]) {
    assert.throws(() => decryptSecret(key, foreign), DecryptionError, foreign);
  }
});

test('several keys (newest first): a value opens with whichever encrypted it, and says which', () => {
  const [newest, older, unrelated] = [randomBytes(32), randomBytes(32), randomBytes(32)];
  const underOlder = encryptSecret(older, 'AUTH_old');
  const underNewest = encryptSecret(newest, 'AUTH_new');
  assert.equal(decryptSecret([newest, older], underOlder), 'AUTH_old');
  assert.equal(decryptSecret([newest, older], underNewest), 'AUTH_new');
  assert.deepEqual(openSecret([newest, older], underOlder), { plaintext: 'AUTH_old', keyIndex: 1 });
  assert.deepEqual(openSecret([newest, older], underNewest), { plaintext: 'AUTH_new', keyIndex: 0 });
  assert.equal(openSecret([newest, unrelated], underOlder), undefined);
  assert.equal(openSecret([], underOlder), undefined);
  assert.throws(() => decryptSecret([newest, unrelated], underOlder), DecryptionError);
});
