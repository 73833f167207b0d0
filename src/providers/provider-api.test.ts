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

/** `text` with every escape a provider may use decoded (repeatedly), in lower case. */
function reveal(text: string): string {
  let previous: string;
  let current = text;
  do {
    previous = current;
    current = current
      .replace(/%([0-9a-f]{2})/gi, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)))
      .replace(/&#x([0-9a-f]+);/gi, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)))
      .replace(/&#([0-9]+);/g, (_, dec: string) => String.fromCharCode(Number(dec)))
      .replace(/\\u([0-9a-f]{4})|\\x([0-9a-f]{2})/gi, (_, u?: string, x?: string) =>
        String.fromCharCode(Number.parseInt((u ?? x)!, 16)),
      );
  } while (current !== previous);
  return current.toLowerCase();
}

const hex = (c: string) => c.charCodeAt(0).toString(16).padStart(2, '0');
/** Ways a provider may echo a value back: another letter case, percent-encoded (once or twice), HTML or JS escapes. */
const ECHOES: Record<string, (secret: string) => string> = {
  upper: (s) => s.toUpperCase(),
  lower: (s) => s.toLowerCase(),
  swapped: (s) => [...s].map((c, i) => (i % 2 ? c.toUpperCase() : c.toLowerCase())).join(''),
  encodeURIComponent: (s) => encodeURIComponent(s),
  percentEvery: (s) => [...s].map((c) => `%${hex(c).toUpperCase()}`).join(''),
  percentSome: (s) => [...s].map((c, i) => (i % 3 ? c : `%${hex(c)}`)).join(''),
  percentTwice: (s) => [...s].map((c) => `%25${hex(c)}`).join(''),
  upperThenPercent: (s) => encodeURIComponent(s.toUpperCase()).replaceAll('_', '%5F'),
  htmlDecimal: (s) => [...s].map((c) => `&#${c.charCodeAt(0)};`).join(''),
  htmlHex: (s) => [...s].map((c) => `&#x${hex(c)};`).join(''),
  jsEscape: (s) => [...s].map((c) => `\\u00${hex(c)}`).join(''),
};

test('scrubProviderText: the configured secret never survives in another letter case or escaped', () => {
  fc.assert(
    fc.property(
      fc.string({ maxLength: 100 }),
      fc.string({ maxLength: 100 }),
      fc.stringMatching(/^[\x21-\x7e][\x20-\x7e]{10,58}[\x21-\x7e]$/),
      fc.constantFrom(...Object.keys(ECHOES)),
      (before, after, configured, how) => {
        const echoed = ECHOES[how]!(configured);
        const safe = scrubProviderText(`${before}${echoed}${after}`, [configured]);
        assert.ok(!reveal(safe).includes(configured.toLowerCase()), `${how}: the secret survived in ${safe}`);
      },
    ),
    { numRuns: 3000 },
  );
  assert.equal(
    scrubProviderText('Invalid key SK_LIVE_ABCD1234 and sk%5Ftest%5Fabcd1234 given', []),
    'Invalid key [redacted] and [redacted] given',
  );
});
