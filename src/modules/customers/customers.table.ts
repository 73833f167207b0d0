// Row shape of `customers`. Deleted customers keep their row (`deleted_at`) so payments and
// events that name them stay intact; every read filters them out.
import type { Selectable } from 'kysely';

export interface CustomersTable {
  id: string;
  email: string;
  name: string | null;
  phone: string | null;
  /** JSON text of a string→string object. */
  metadata: string;
  created_at: string;
  updated_at: string;
  deleted_at: string | null;
}

export type CustomerRow = Selectable<CustomersTable>;
