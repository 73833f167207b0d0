import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { scrubProviderText } from './provider-api.ts';

const keyChars = fc.stringMatching(/^[A-Za-z0-9]{8,40}$/);
/** Key-shaped secrets: Paystack/Stripe secret, restricted and publishable keys, webhook secrets. */
const credential = fc
  .tuple(fc.constantFrom('sk_test_', 'sk_live_', 'rk_live_', 'pk_test_', 'sk_', 'whsec_'), keyChars)
  .map(([prefix, rest]) => prefix + rest);

test('scrubProviderText: a configured secret or anything key-shaped never survives, whatever surrounds it', () => {
  fc.assert(
    fc.property(
      fc.string({ maxLength: 200 }),
      fc.string({ maxLength: 200 }),
      credential,
      // As configured: trimmed, printable (config.ts trims every value).
      fc.stringMatching(/^[\x21-\x7e][\x20-\x7e]{10,58}[\x21-\x7e]$/),
      (before, after, shaped, configured) => {
        const text = `${before}${shaped} ${configured}${after}`;
        const safe = scrubProviderText(text, [configured]);
        assert.ok(!safe.includes(shaped), 'a key-shaped value survived');
        assert.ok(!safe.includes(configured), 'the configured secret survived');
        assert.ok(safe.length <= 300);
        assert.ok(![...safe].some((c) => c < ' ' || c === '\x7f'), 'a control character survived');
      },
    ),
    { numRuns: 2000 },
  );
});

test('scrubProviderText keeps an ordinary message and drops what is not text', () => {
  assert.equal(
    scrubProviderText('Currency not supported by merchant', ['sk_test_x']),
    'Currency not supported by merchant',
  );
  assert.equal(scrubProviderText('Invalid key sk_live_abcd1234 given', []), 'Invalid key [redacted] given');
  assert.equal(scrubProviderText({ message: 'x' }, []), '');
  assert.equal(scrubProviderText(undefined, []), '');
});
