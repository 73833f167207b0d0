// Money, dates, quantities and percentages in each document locale, through Intl (SPEC §14
// "Documents"): from minor units, exactly, with each currency's own number of decimals.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { documentLocale } from '../../shared/locales.ts';
import { formatDate, formatInteger, formatMoney, formatPercent } from './documents.format.ts';

const NBSP = '\u00a0';
const NNBSP = '\u202f'; // French groups thousands with a narrow no-break space
const tag = (preferred: string | null) => documentLocale(preferred).tag;

test('a German customer sees "1.500,00 €"; French, Spanish, Portuguese and English customers their own formats', () => {
  assert.equal(formatMoney(150000, 'EUR', tag('de')), `1.500,00${NBSP}€`);
  assert.equal(formatMoney(150000, 'EUR', tag('fr')), `1${NNBSP}500,00${NBSP}€`);
  // CLDR groups Spanish thousands only from five digits on.
  assert.equal(formatMoney(150000, 'EUR', tag('es')), `1500,00${NBSP}€`);
  assert.equal(formatMoney(1500000, 'EUR', tag('es')), `15.000,00${NBSP}€`);
  assert.equal(formatMoney(150000, 'EUR', tag('pt')), `1500,00${NBSP}€`);
  assert.equal(formatMoney(150000, 'EUR', tag('pt-BR')), `€${NBSP}1.500,00`);
  assert.equal(formatMoney(150000, 'EUR', tag(null)), '€1,500.00');
  assert.equal(formatMoney(150000, 'EUR', tag('de-AT')), `€${NBSP}1.500,00`);
  assert.equal(formatMoney(-980, 'EUR', tag('de')), `-9,80${NBSP}€`);
  assert.equal(formatMoney(500000, 'NGN', tag('en')), '₦5,000.00');
  assert.equal(formatMoney(1, 'USD', tag('en')), '$0.01');
});

test('JPY has no decimals, KWD and BHD three, in every language', () => {
  assert.equal(formatMoney(5000, 'JPY', tag('en')), '¥5,000');
  assert.equal(formatMoney(5000, 'JPY', tag('de')), `5.000${NBSP}¥`);
  assert.equal(formatMoney(1500, 'KWD', tag('en')), `KWD${NBSP}1.500`);
  assert.equal(formatMoney(1500, 'KWD', tag('de')), `1,500${NBSP}KWD`);
  assert.equal(formatMoney(7, 'KWD', tag('en')), `KWD${NBSP}0.007`);
  assert.equal(formatMoney(1234567, 'BHD', tag('fr')), `1${NNBSP}234,567${NBSP}BHD`);
  assert.equal(formatMoney(1234567, 'BHD', tag('es')), `1234,567${NBSP}BHD`);
});

test('any safe integer is exact (never divided as a float); a code Intl refuses still shows, never throws', () => {
  // 9007199254740991 / 100 is not exact as a float.
  assert.equal(formatMoney(Number.MAX_SAFE_INTEGER, 'USD', tag('en')), '$90,071,992,547,409.91');
  assert.equal(formatMoney(Number.MAX_SAFE_INTEGER, 'EUR', tag('de')), `90.071.992.547.409,91${NBSP}€`);
  assert.equal(formatMoney(1234, 'N1G', tag('de')), '12.34 N1G');
  fc.assert(
    fc.property(fc.integer({ min: -1e15, max: 1e15 }), (minor) => {
      // The digits printed are the minor units' digits, whatever the locale.
      const digits = formatMoney(minor, 'EUR', tag('de')).replace(/[^0-9]/g, '');
      assert.equal(BigInt(digits), BigInt(Math.abs(minor)));
    }),
    { numRuns: 200 },
  );
});

test('dates are UTC calendar dates in the locale; quantities and percentages are grouped and exact', () => {
  const late = '2026-01-22T23:30:00.000Z'; // still the 22nd in UTC
  assert.equal(formatDate(late, tag('en')), '22 January 2026');
  assert.equal(formatDate(late, tag('de')), '22. Januar 2026');
  assert.equal(formatDate(late, tag('fr')), '22 janvier 2026');
  assert.equal(formatDate(late, tag('es')), '22 de enero de 2026');
  assert.equal(formatDate(late, tag('pt')), '22 de janeiro de 2026');
  assert.equal(formatDate(late, tag('en'), 'short'), '22 Jan 2026');
  assert.equal(formatDate(late, tag('en-US')), 'January 22, 2026');
  assert.equal(formatInteger(1000000, tag('de')), '1.000.000');
  assert.equal(formatInteger(1000000, tag('en')), '1,000,000');
  assert.equal(formatPercent(19, tag('de')), `19${NBSP}%`);
  assert.equal(formatPercent(7.4567, tag('fr')), `7,4567${NBSP}%`);
  assert.equal(formatPercent(20, tag('en')), '20%');
});
