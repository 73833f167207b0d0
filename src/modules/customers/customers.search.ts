// The operator console's customer finder (SPEC §16 "search by email or name … fast with 1 M
// customers"): keyset pages over indexes — the unique index on `email_normalized` (migration
// 0008) for an email prefix, `customers_by_name_normalized` (0040) for a name prefix, and
// `customers_by_created_at` (0001) for the newest first. Both prefixes ignore case the same
// way on both databases: each is folded by the rule of its column (customers.email,
// customers.name), in TypeScript. A page never counts or skips rows: each reads `limit + 1`
// index entries after its cursor.
import type { Kysely } from 'kysely';
import type { Database } from '../../db/database.ts';
import { CUSTOMER_COLUMNS, liveCustomers } from './customers.repository.ts';
import { normalizeEmail } from './customers.email.ts';
import { normalizeName } from './customers.name.ts';
import { toCustomer } from './customers.service.ts';
import type { Customer } from './customers.schemas.ts';

/** What the finder looks in: an email prefix or a name prefix (both without case), or nothing (newest first). */
export type CustomerSearchField = 'email' | 'name';

/** The greatest code point: `prefix + MAX_CHAR` is above every text that starts with `prefix`. */
const MAX_CHAR = '\u{10FFFF}';

export interface CustomerSearch {
  /** The prefix searched; '' lists every customer, newest first. At most 254 characters. */
  query: string;
  field: CustomerSearchField;
  /** The `next` of the page before, or undefined for the first page. */
  cursor: string | undefined;
  /** Customers per page, 1–100. */
  limit: number;
}

/** A keyset page: the customers and the cursor of the next page (undefined on the last one). */
export interface CustomerSearchPage {
  data: Customer[];
  next: string | undefined;
}

/** The cursor after a row: its sort key and id, JSON then base64url (opaque to the browser). */
function cursorOf(key: string, id: string): string {
  return Buffer.from(JSON.stringify([key, id])).toString('base64url');
}

/** A cursor read back, or undefined when it is not one of ours (then the first page is shown). */
function readCursor(cursor: string | undefined): [string, string] | undefined {
  if (cursor === undefined || cursor.length > 2048) return undefined;
  try {
    const value: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    // NUL cannot be a PostgreSQL text value: such a cursor is not one of ours.
    if (
      Array.isArray(value) &&
      value.length === 2 &&
      value.every((part) => typeof part === 'string' && !part.includes('\u0000'))
    ) {
      return [value[0] as string, value[1] as string];
    }
  } catch {
    // Not JSON: a hand-edited cursor starts over.
  }
  return undefined;
}

/**
 * One page of live customers (SPEC §16): with a `query`, those whose normalised email
 * (customers.email normalizeEmail) or normalised name (customers.name normalizeName) starts
 * with the query normalised the same way, in that column's order;
 * without, the newest first. Keyset pagination over an index (see the file comment), so every
 * page costs the same at any depth and any table size. Never throws for odd input: NUL and
 * other characters are compared as text, bound as parameters.
 */
export async function searchCustomers(db: Kysely<Database>, search: CustomerSearch): Promise<CustomerSearchPage> {
  const after = readCursor(search.cursor);
  const limit = Math.min(Math.max(Math.trunc(search.limit), 1), 100);
  let query = liveCustomers(db).select([...CUSTOMER_COLUMNS, 'email_normalized', 'name_normalized']);
  let keyOf: (row: {
    email_normalized: string;
    name_normalized: string | null;
    created_at: string;
    id: string;
  }) => string;
  if (search.query === '') {
    if (after) query = query.where((eb) => eb(eb.refTuple('created_at', 'id'), '<', eb.tuple(after[0], after[1])));
    query = query.orderBy('created_at', 'desc').orderBy('id', 'desc');
    keyOf = (row) => row.created_at;
  } else if (search.field === 'email') {
    const prefix = normalizeEmail(search.query);
    query = query.where('email_normalized', '>=', prefix).where('email_normalized', '<', prefix + MAX_CHAR);
    if (after)
      query = query.where((eb) => eb(eb.refTuple('email_normalized', 'id'), '>', eb.tuple(after[0], after[1])));
    query = query.orderBy('email_normalized').orderBy('id');
    keyOf = (row) => row.email_normalized;
  } else {
    const prefix = normalizeName(search.query);
    query = query.where('name_normalized', '>=', prefix).where('name_normalized', '<', prefix + MAX_CHAR);
    if (after) query = query.where((eb) => eb(eb.refTuple('name_normalized', 'id'), '>', eb.tuple(after[0], after[1])));
    query = query.orderBy('name_normalized').orderBy('id');
    keyOf = (row) => row.name_normalized ?? '';
  }
  const rows = await query.limit(limit + 1).execute();
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  const next = rows.length > limit && last ? cursorOf(keyOf(last), last.id) : undefined;
  return { data: page.map((row) => toCustomer(row)), next };
}
