// A worker batch whose one row fails (SPEC §7 "Failing rows"). A job claims a batch of due
// rows and does their work in one transaction; an error of one row — a renewal whose amount
// overflows, a corrupt record, a bug reached by one customer's data — would roll the whole
// batch back, and the same batch would be claimed and fail again every tick: one bad row
// blocking every row behind it. Here the batch runs as one plain transaction first (the common
// case costs nothing more); if it throws, it runs again with a savepoint per row: a failing
// row is rolled back alone and recorded in `worker_row_failures` with a retry time that backs
// off, the others commit. The claims skip a row until its retry time (whereNotWaitingRetry),
// and a row that goes through loses its record. Operators see them in the log and in
// /metrics (`billing_worker_row_failures`).
import { type Kysely, type RawBuilder, type SelectQueryBuilder, sql, type Transaction } from 'kysely';
import { inList } from './bulk.ts';
import type { Database } from './database.ts';
import { isRetryableConflict } from './errors.ts';
import { sendWithNextStatement } from './pg-traffic.ts';
import { earliest, type JobScope, whereInScope } from './scope.ts';
import { transactionWithRetry } from './transaction.ts';
import type { Clock } from '../shared/clock.ts';

/** The first wait before a failed row is claimed again (ms, in the job's clock). */
export const ROW_RETRY_BASE_MS = 5 * 60_000;
/** The longest wait between two tries of a failing row (ms). */
export const ROW_RETRY_MAX_MS = 24 * 60 * 60_000;

/**
 * Milliseconds until a row that failed `attempts` times in a row (≥ 1) is tried again:
 * ROW_RETRY_BASE_MS doubled for each failure after the first (5 min, 10, 20 … ), at most
 * ROW_RETRY_MAX_MS (a day): a row that keeps failing costs one try a day, not one a tick.
 */
export function rowRetryDelayMs(attempts: number): number {
  const doublings = Math.min(Math.max(attempts - 1, 0), 20);
  return Math.min(ROW_RETRY_BASE_MS * 2 ** doublings, ROW_RETRY_MAX_MS);
}

/** A claimed row: its id and its scope (SPEC §11). */
export interface BatchRow {
  id: string;
  test_clock_id: string | null;
}

/** Where a failing row is reported (a pino logger or the worker's log fits). */
export interface RowFailureLog {
  error(object: object, message: string): void;
}

/** One job's batch, in the steps runIsolatedBatch takes. */
export interface IsolatedBatch<R extends BatchRow, T> {
  /** The job's name: the key of its rows' failure records. */
  job: string;
  /** Claims the batch's due rows in `trx` (SKIP LOCKED on PostgreSQL), skipping rows waiting for a retry. */
  claim(trx: Transaction<Database>): Promise<R[]>;
  /** After the claim, before any row (locks the whole batch needs, in lock order; deferring events). */
  begin?(trx: Transaction<Database>, rows: readonly R[]): Promise<void>;
  /** One row's work, in `trx` (the batch's transaction, or a savepoint of it). */
  each(trx: Transaction<Database>, row: R): Promise<T>;
  /**
   * Every row's work at once, in the first run (the plain transaction) instead of `each` per
   * row: the same results, in `rows` order, in fewer statements. When it throws, the rerun
   * takes the rows one by one through `each`, a savepoint each.
   */
  all?(trx: Transaction<Database>, rows: readonly R[]): Promise<T[]>;
  /** After every row, before the commit (writing what `begin` deferred). */
  end?(trx: Transaction<Database>): Promise<void>;
}

/** What a batch did: the rows claimed, and the results of those that went through (claim order). */
export interface BatchOutcome<R, T> {
  rows: R[];
  results: T[];
  /** The rows that failed (rolled back alone and recorded). */
  failed: R[];
}

/**
 * Runs `batch` (see the header): claim, begin, each row (or `all` of them), end, in ONE
 * transaction, committed;
 * a PostgreSQL deadlock or serialization failure reruns it (transactionWithRetry). When it
 * throws anything else, it runs again in a new transaction (a new claim) with a savepoint per
 * row: a row that throws is rolled back to its savepoint, recorded in `worker_row_failures`
 * (attempts, error, retry at now + rowRetryDelayMs in `clock`, the job's time) and reported
 * on `log`; the others commit. Rows that went through lose any failure record. Throws when
 * the claim, `begin` or `end` fails (then nothing commits), or when a row loses a race in
 * the second run (the next tick tries again).
 */
export async function runIsolatedBatch<R extends BatchRow, T>(
  db: Kysely<Database>,
  clock: Clock,
  batch: IsolatedBatch<R, T>,
  log?: RowFailureLog,
): Promise<BatchOutcome<R, T>> {
  try {
    return await transactionWithRetry(db, async (trx) => {
      const rows = await batch.claim(trx);
      await batch.begin?.(trx, rows);
      let results: T[] = [];
      if (batch.all) results = await batch.all(trx, rows);
      else for (const row of rows) results.push(await batch.each(trx, row));
      await batch.end?.(trx);
      await clearRowFailures(trx, batch.job, rows);
      return { rows, results, failed: [] };
    });
  } catch (error) {
    if (isRetryableConflict(error)) throw error;
    return runRowByRow(db, clock, batch, log);
  }
}

async function runRowByRow<R extends BatchRow, T>(
  db: Kysely<Database>,
  clock: Clock,
  batch: IsolatedBatch<R, T>,
  log: RowFailureLog | undefined,
): Promise<BatchOutcome<R, T>> {
  const trx = await db.startTransaction().execute();
  try {
    const rows = await batch.claim(trx);
    await batch.begin?.(trx, rows);
    const results: T[] = [];
    const done: R[] = [];
    const failed: R[] = [];
    for (const row of rows) {
      // A savepoint is a transaction object of its own: what `begin` deferred on `trx` (events,
      // counts) is not deferred here, so a row rolled back takes its events with it.
      const savepoint = await trx.savepoint('batch_row').execute();
      try {
        results.push(await batch.each(savepoint, row));
        await savepoint.releaseSavepoint('batch_row').execute();
        done.push(row);
      } catch (error) {
        if (isRetryableConflict(error)) throw error;
        await savepoint.rollbackToSavepoint('batch_row').execute();
        await savepoint.releaseSavepoint('batch_row').execute();
        const record = await recordRowFailure(trx, clock, batch.job, row, error);
        failed.push(row);
        log?.error(
          { err: error, job: batch.job, rowId: row.id, attempts: record.attempts, retryAt: record.retry_at },
          'worker row failed; the rest of its batch went through, it is retried after a backoff',
        );
      }
    }
    await batch.end?.(trx);
    await clearRowFailures(trx, batch.job, done);
    await trx.commit().execute();
    return { rows, results, failed };
  } catch (error) {
    await trx
      .rollback()
      .execute()
      .catch(() => {});
    throw error;
  }
}

/** The error as recorded: its name and message, at most 1,000 characters. */
function errorText(error: unknown): string {
  const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return text.slice(0, 1_000);
}

/**
 * Records that `row`'s work for `job` failed at `clock`'s now: a first failure, or one more
 * (attempts + 1); its retry waits rowRetryDelayMs(attempts). Returns the record.
 */
export async function recordRowFailure(
  trx: Transaction<Database>,
  clock: Clock,
  job: string,
  row: BatchRow,
  error: unknown,
): Promise<{ attempts: number; retry_at: string }> {
  const previous = await trx
    .selectFrom('worker_row_failures')
    .select(['attempts', 'first_failed_at'])
    .where('job', '=', job)
    .where('row_id', '=', row.id)
    .executeTakeFirst();
  const now = clock.now();
  const attempts = (previous?.attempts ?? 0) + 1;
  const values = {
    job,
    row_id: row.id,
    test_clock_id: row.test_clock_id,
    attempts,
    error: errorText(error),
    first_failed_at: previous?.first_failed_at ?? now.toISOString(),
    failed_at: now.toISOString(),
    retry_at: new Date(now.getTime() + rowRetryDelayMs(attempts)).toISOString(),
  };
  await trx
    .insertInto('worker_row_failures')
    .values(values)
    .onConflict((oc) =>
      oc.columns(['job', 'row_id']).doUpdateSet({
        attempts: values.attempts,
        error: values.error,
        failed_at: values.failed_at,
        retry_at: values.retry_at,
      }),
    )
    .execute();
  return { attempts, retry_at: values.retry_at };
}

/** Deletes the failure records of `rows` for `job` (they went through); one statement, unanswered. */
async function clearRowFailures(trx: Transaction<Database>, job: string, rows: readonly BatchRow[]): Promise<void> {
  if (rows.length === 0) return;
  await sendWithNextStatement(
    trx,
    trx
      .deleteFrom('worker_row_failures')
      .where('job', '=', job)
      .where(
        inList(
          trx,
          'row_id',
          rows.map((row) => row.id),
        ),
      ),
  );
}

/**
 * The claim's filter: rows of `job` whose id (`idColumn`, e.g. `'subscriptions.id'`) has a
 * failure record with a retry after `now` (ISO 8601) are not claimed. One primary-key probe
 * per candidate row; the claim's due index still drives it.
 */
export function notWaitingRetry(job: string, idColumn: string, now: string): RawBuilder<boolean> {
  return sql<boolean>`not exists (select 1 from worker_row_failures as f where f.job = ${job} and f.row_id = ${sql.ref(idColumn)} and f.retry_at > ${now})`;
}

/** `query` without the rows of `job` waiting for a retry at `now` (see notWaitingRetry). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- works for any select
export function whereNotWaitingRetry<QB extends SelectQueryBuilder<any, any, any>>(
  query: QB,
  job: string,
  idColumn: string,
  now: string,
): QB {
  return query.where(notWaitingRetry(job, idColumn, now)) as QB;
}

/**
 * The earliest retry time of `job`'s failed rows of `scope` strictly after `after`, or null: a
 * test clock's advance steps there (Job.nextDueAt), so a clock's failed row is retried in its
 * time as a real-time one is.
 */
export async function nextRowRetryAt(
  db: Kysely<Database>,
  job: string,
  scope: JobScope,
  after: Date,
): Promise<Date | null> {
  const row = await whereInScope(
    db
      .selectFrom('worker_row_failures')
      .select((eb) => eb.fn.min('retry_at').as('due'))
      .where('job', '=', job)
      .where('retry_at', '>', after.toISOString()),
    'worker_row_failures.test_clock_id',
    scope,
  ).executeTakeFirst();
  return earliest([row?.due]);
}

/**
 * The earliest of `due` (a job's own next due time, Job.nextDueAt) and the next retry of its
 * failed rows of `scope` after `after` (nextRowRetryAt), or null.
 */
export async function withRowRetries(
  db: Kysely<Database>,
  job: string,
  scope: JobScope,
  after: Date,
  due: Promise<Date | null>,
): Promise<Date | null> {
  const [own, retry] = await Promise.all([due, nextRowRetryAt(db, job, scope, after)]);
  if (own === null) return retry;
  return retry === null || own.getTime() <= retry.getTime() ? own : retry;
}

/** Deletes the failure records of test clock `testClockId`'s rows (the clock is being deleted, SPEC §11). */
export async function deleteRowFailuresOfTestClock(trx: Transaction<Database>, testClockId: string): Promise<void> {
  await trx.deleteFrom('worker_row_failures').where('test_clock_id', '=', testClockId).execute();
}

/** Failure records per job (for /metrics): rows whose last run failed, waiting for a retry or due for one. */
export async function countRowFailures(db: Kysely<Database>): Promise<Map<string, number>> {
  const rows = await db
    .selectFrom('worker_row_failures')
    .select(['job', (eb) => eb.fn.countAll<number | string>().as('n')])
    .groupBy('job')
    .execute();
  return new Map(rows.map((row) => [row.job, Number(row.n)]));
}
