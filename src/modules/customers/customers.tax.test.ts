// Tax ids are checked for format (SPEC §14), with the country prefix, however they are typed.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isValidTaxId } from './customers.tax.ts';

test('well-formed VAT numbers of each type pass, as written or with spaces, dots and dashes', () => {
  for (const [type, value] of [
    ['eu_vat', 'DE123456789'],
    ['eu_vat', 'de 123 456 789'],
    ['eu_vat', 'FRXX123456789'],
    ['eu_vat', 'EL123456789'],
    ['eu_vat', 'NL123456789B01'],
    ['gb_vat', 'GB123456789'],
    ['gb_vat', 'GB 123 4567 89'],
    ['ch_vat', 'CHE-116.281.710 MWST'],
    ['no_vat', 'NO123456789MVA'],
  ] as const) {
    assert.equal(isValidTaxId(type, value), true, `${type} ${value}`);
  }
});

test('a number without its prefix, of another country than its type, or malformed is refused', () => {
  for (const [type, value] of [
    ['eu_vat', '123456789'],
    ['eu_vat', 'DE12345678'],
    ['eu_vat', 'GB123456789'],
    ['eu_vat', 'XX123456789'],
    ['gb_vat', 'DE123456789'],
    ['gb_vat', 'GB12345'],
    ['ch_vat', 'CHE-116.281.711 MWST'],
    ['no_vat', 'NO123456789'],
    ['eu_vat', ''],
  ] as const) {
    assert.equal(isValidTaxId(type, value), false, `${type} ${value}`);
  }
});
