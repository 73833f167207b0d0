// Row shape of `row_counts`: exact totals of big lists, kept in the same transaction as
// each insert/delete, so `meta.total` never counts a million rows per request.
export interface RowCountsTable {
  name: string;
  count: number;
}
