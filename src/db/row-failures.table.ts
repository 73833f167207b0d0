// Row shape of `worker_row_failures`: a worker batch's row whose work failed, waiting for its
// retry (row-failures.ts is the only writer).

export interface WorkerRowFailuresTable {
  /** The job's name (`issue_renewal_invoices`, …). */
  job: string;
  /** The claimed row's id (`sub_…`, `inv_…`, `dc_…`). */
  row_id: string;
  /** The row's test clock (`clock_…`); null: real time (SPEC §11). */
  test_clock_id: string | null;
  /** Failed runs in a row, 1 for the first. */
  attempts: number;
  /** The last failure: the error's name and message (never shown to API clients). */
  error: string;
  first_failed_at: string;
  failed_at: string;
  /** The job's clock time before which the row is not claimed again. */
  retry_at: string;
}
