import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isValidEmail, normalizeEmail } from './customers.email.ts';

test('normalizeEmail is NFC then lower case: every spelling of one address gives one value', () => {
  const nfc = 'Ädä.Ünï@Exämple.com';
  const nfd = nfc.normalize('NFD');
  assert.notEqual(nfd, nfc);
  for (const spelling of [nfc, nfd, nfc.toUpperCase(), nfd.toLowerCase(), 'ädä.ünï@exämple.com']) {
    assert.equal(normalizeEmail(spelling), 'ädä.ünï@exämple.com', JSON.stringify(spelling));
  }
  assert.equal(normalizeEmail('Grace@Example.COM'), 'grace@example.com');
});

test('isValidEmail accepts RFC 6531 internationalised addresses and the ASCII ones accepted before', () => {
  for (const email of [
    'ada@example.com',
    'a.b+tag@sub.example.co.uk',
    "o'brien!#$%&*/=?^_`{|}~-@example.com",
    'Ädä@example.com',
    'Ädä@example.com'.normalize('NFD'),
    '用户@例子.广告',
    'почта@пример.рф',
    'x@xn--80ak6aa92e.com',
    `${'a'.repeat(64)}@${'b'.repeat(185)}.com`,
  ]) {
    assert.equal(isValidEmail(email), true, email);
  }
});

test('isValidEmail refuses no @, two @, whitespace, control characters, no dot or an empty label in the domain, > 254 characters', () => {
  for (const email of [
    '',
    'not-an-email',
    '@example.com',
    'a@',
    'a@b@example.com',
    'a@localhost',
    'a@.example.com',
    'a@example..com',
    'a@example.com.',
    'a b@example.com',
    'a@exam ple.com',
    ' a@example.com',
    'a\u00a0b@example.com',
    'a\u0000@example.com',
    'a\u0085@example.com',
    'a\ud800@example.com',
    '"a"@example.com',
    'a@[127.0.0.1]',
    'a@exa_mple.com',
    `${'a'.repeat(64)}@${'b'.repeat(186)}.com`,
    `${'ä'.repeat(64)}@${'b'.repeat(186)}.com`,
  ]) {
    assert.equal(isValidEmail(email), false, JSON.stringify(email));
  }
});
