// Row shape of `row_counts`: exact totals of big lists, kept in the same transaction as
// each insert/delete, so `meta.total` never counts a million rows per request.
import type { Generated } from 'kysely';
/** PostgreSQL only: one change to a total, appended by a transaction, folded in by the worker. */
export interface RowCountDeltasTable {
  id: Generated<number>;
  name: string;
  delta: number;
}

export interface RowCountsTable {
  name: string;
  count: number;
}
