// The languages documents are written in (SPEC §14 "Documents"): a customer's
// `preferred_locale` is a BCP 47 tag (`de`, `de-AT`, `pt-BR`) whose language is one of
// DOCUMENT_LANGUAGES; it is stored as given and read through documentLocale() on use.

/** The languages of the message catalogue; `en` is the default. */
export const DOCUMENT_LANGUAGES = ['en', 'fr', 'de', 'es', 'pt'] as const;
export type DocumentLanguage = (typeof DOCUMENT_LANGUAGES)[number];

/**
 * What a document is rendered in: `language` picks the words (the catalogue), `tag` the
 * number and date formats (Intl). A bare `en` formats as `en-GB` (day month year, as the
 * hosted page always did) and a bare `pt` as `pt-PT` (Intl's `pt` is Brazil's; the other bare
 * languages already default to their European country); any other tag formats as its
 * canonical self (`de-AT` → Austrian, `pt-BR` → Brazilian).
 */
export interface DocumentLocale {
  language: DocumentLanguage;
  tag: string;
}

/** The format of a bare language tag where Intl's default country is not the European one. */
const BARE_DEFAULTS: Readonly<Record<string, string>> = { en: 'en-GB', pt: 'pt-PT' };

/** The canonical form of `tag` (Intl.getCanonicalLocales), or undefined when it is not BCP 47. */
function canonicalTag(tag: string): string | undefined {
  try {
    return Intl.getCanonicalLocales(tag)[0];
  } catch {
    return undefined;
  }
}

/** The catalogue language of a canonical tag, when it has one. */
function languageOf(canonical: string): DocumentLanguage | undefined {
  const language = new Intl.Locale(canonical).language;
  return (DOCUMENT_LANGUAGES as readonly string[]).includes(language) ? (language as DocumentLanguage) : undefined;
}

/**
 * True when `tag` is a well-formed BCP 47 tag (RFC 5646, as Intl reads it) whose language is
 * one of DOCUMENT_LANGUAGES: `de`, `de-AT`, `pt-BR`, `EN-gb`. False for `it`, `xx-YY`, `de_DE`, ''.
 */
export function isDocumentLocaleTag(tag: string): boolean {
  const canonical = canonicalTag(tag);
  return canonical !== undefined && languageOf(canonical) !== undefined;
}

/**
 * The locale a document for a customer with `preferredLocale` (as stored; null or a tag
 * isDocumentLocaleTag refuses: `en`) is rendered in.
 */
export function documentLocale(preferredLocale: string | null | undefined): DocumentLocale {
  const canonical = preferredLocale ? canonicalTag(preferredLocale) : undefined;
  const language = canonical === undefined ? undefined : languageOf(canonical);
  if (canonical === undefined || language === undefined) return { language: 'en', tag: 'en-GB' };
  return { language, tag: BARE_DEFAULTS[canonical] ?? canonical };
}
