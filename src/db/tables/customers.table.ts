// Row shape of `customers`. Deleted customers keep their row (`deleted_at`) so payments and
// events that name them stay intact; every read filters them out.
import type { Selectable } from 'kysely';

export interface CustomersTable {
  id: string;
  /** As the client or provider sent it. */
  email: string;
  /**
   * `normalizeEmail(email)` (modules/customers/customers.email.ts): what emails compare by, unique among live
   * customers. Only younger live rows that already collided when migration 0008 added the
   * column hold `<normalised> (collided <own id>)`, which no valid address can match.
   */
  email_normalized: string;
  name: string | null;
  /**
   * `normalizeName(name)` (modules/customers/customers.name.ts: NFKC, then full lower case),
   * written with every name by the repository: what the console's name search compares by.
   */
  name_normalized: string | null;
  phone: string | null;
  /** JSON text of a string→string object. */
  metadata: string;
  created_at: string;
  updated_at: string;
  deleted_at: string | null;
  /**
   * The BCP 47 tag the client gave (`de-AT`), whose language picks the documents' words and
   * formats (modules/documents/locales.ts); null: `en` (SPEC §14 "Documents").
   */
  preferred_locale: string | null;
  /** The client's own key for the customer (≤ 255 chars), unique among live customers; usage events may name it. */
  external_id: string | null;
  /** The test clock (`clock_…`) of the customer this row belongs to; null: real time (SPEC §11). */
  test_clock_id: string | null;
  /** JSON array of `txr_…` ids: the customer's tax rates (SPEC §14 precedence); '[]' for none. */
  tax_rate_ids: string;
  /** SPEC §14: `exempt` pays no tax; `reverse` pays none and its invoices say "Reverse charge". */
  tax_exempt: TaxExempt;
  /** JSON array of {type, value} (customers.tax-ids.ts); '[]' for none. */
  tax_ids: string;
  /** JSON object {country, line1, line2?, city, postal_code, state?}, or null. */
  address: string | null;
}

export const TAX_EXEMPT_VALUES = ['none', 'exempt', 'reverse'] as const;
export type TaxExempt = (typeof TAX_EXEMPT_VALUES)[number];

export type CustomerRow = Selectable<CustomersTable>;
