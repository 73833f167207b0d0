// The one email rule (SPEC §3): which addresses are accepted, and the form they compare by.
// The API and provider-event attribution use these (migration 0008 froze a copy), so a
// customer found or refused by one path is found or refused by every path, on every
// database (SQLite's lower() folds ASCII only; JavaScript's folds all of Unicode).

/** The longest address accepted, in characters (RFC 5321 path limit, as before). */
export const EMAIL_MAX_LENGTH = 254;

// RFC 6531 widens RFC 5322's dot-atom with any non-ASCII UTF-8 character, in the local
// part and in the domain. Quoted local parts and address literals are not accepted (no
// provider sends them and they never were).
const LOCAL_PART = /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~.\-\u0080-\u{10FFFF}]+$/u;
const DOMAIN_LABEL = /^[A-Za-z0-9\-\u0080-\u{10FFFF}]+$/u;
// Whitespace, control characters (NUL, C1) and lone surrogates: never part of an address,
// and the last cannot be stored as UTF-8 at all.
const FORBIDDEN = /[\s\p{Cc}\p{Cs}]/u;

/**
 * True when `email` is an address we accept (SPEC §3; RFC 6531 internationalised
 * addresses included): at most 254 characters (code points), exactly one `@`, no whitespace
 * or control characters, a non-empty local part, and a domain of at least two non-empty
 * dot-separated labels. `Ädä@exämple.com` is valid; `not-an-email`, `a@localhost`,
 * `a b@x.io` and `a@x..io` are not.
 */
export function isValidEmail(email: string): boolean {
  if ([...email].length > EMAIL_MAX_LENGTH || FORBIDDEN.test(email)) return false;
  const parts = email.split('@');
  if (parts.length !== 2) return false;
  const [local = '', domain = ''] = parts;
  const labels = domain.split('.');
  return LOCAL_PART.test(local) && labels.length >= 2 && labels.every((label) => DOMAIN_LABEL.test(label));
}

/**
 * The form emails compare by (SPEC §3): Unicode NFC, then JavaScript's full lower-case
 * mapping. `Ädä@Example.com`, `ÄDÄ@EXAMPLE.COM` and the decomposed `A\u0308dä@example.com`
 * all give `ädä@example.com`. Stored in `customers.email_normalized`, whose unique index
 * keeps one live customer per normalised email; the `email` column keeps what was sent.
 */
export function normalizeEmail(email: string): string {
  return email.normalize('NFC').toLowerCase();
}
