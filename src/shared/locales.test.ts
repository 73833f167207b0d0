// Which tags a customer may prefer, and what a stored tag renders in (SPEC §14 "Documents").
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { documentLocale, isDocumentLocaleTag } from './locales.ts';

test('a tag is accepted when its language is en, fr, de, es or pt, with or without a region', () => {
  for (const tag of ['en', 'fr', 'de', 'es', 'pt', 'de-AT', 'pt-BR', 'EN-gb', 'fr-CA', 'es-419', 'de-CH-1996']) {
    assert.equal(isDocumentLocaleTag(tag), true, tag);
  }
  for (const tag of ['', 'it', 'ja-JP', 'xx', 'de_DE', 'german', 'de-', '-de', 'en US', 'de-AT\u0000']) {
    assert.equal(isDocumentLocaleTag(tag), false, tag);
  }
});

test('null and unsupported tags render in en (formatted en-GB); bare pt as pt-PT; others in their language and canonical tag', () => {
  assert.deepEqual(documentLocale(null), { language: 'en', tag: 'en-GB' });
  assert.deepEqual(documentLocale(undefined), { language: 'en', tag: 'en-GB' });
  assert.deepEqual(documentLocale('it'), { language: 'en', tag: 'en-GB' });
  assert.deepEqual(documentLocale('en'), { language: 'en', tag: 'en-GB' });
  assert.deepEqual(documentLocale('en-us'), { language: 'en', tag: 'en-US' });
  assert.deepEqual(documentLocale('de'), { language: 'de', tag: 'de' });
  assert.deepEqual(documentLocale('DE-at'), { language: 'de', tag: 'de-AT' });
  assert.deepEqual(documentLocale('pt'), { language: 'pt', tag: 'pt-PT' });
  assert.deepEqual(documentLocale('pt-BR'), { language: 'pt', tag: 'pt-BR' });
});
