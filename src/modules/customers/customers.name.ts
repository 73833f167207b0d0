// The one name folding rule of the console's customer search (SPEC §16): Unicode NFKC (a
// full-width "Ａｄａ" and a ligature "ﬁ" compare as "Ada" and "fi"), then JavaScript's full
// lower-case mapping (all of Unicode, not SQLite's ASCII-only lower()). Computed here, stored
// in `customers.name_normalized` by the repository, so both databases compare the same values.

/** `name` folded for comparison (see the file comment): `'ÉLODIE Ｄｕｐｏｎｔ'` → `'élodie dupont'`. */
export function normalizeName(name: string): string {
  return name.normalize('NFKC').toLowerCase();
}
