// What a module hands the background worker (SPEC §7): a Job (due work, claimed in small
// batches) or a WorkerService (work with its own loop). Modules define them; the worker's
// list (worker/jobs.ts) is the one place that names them all; worker/runner.ts runs them.
// The contract sits below the worker so modules never import the worker.
import { type SelectQueryBuilder, sql } from 'kysely';
import type { Deps } from '../deps.ts';

/**
 * Whose due work one run handles (SPEC §11): real time (`testClockId` null: only rows with no
 * test clock) or one test clock's rows, run by its advance with `deps.clock` at the clock's
 * step. A clock-aware job filters every row it claims with whereInScope.
 */
export interface JobScope {
  testClockId: string | null;
}

/** The real-time worker's scope: rows of customers without a test clock. */
export const REAL_TIME: JobScope = Object.freeze({ testClockId: null });

/**
 * One kind of due work. `run` handles at most `batchSize` items of `scope` (default
 * REAL_TIME) that are due at `deps.clock.now()`, and returns how many.
 *
 * A job over customers' rows is clock-aware (SPEC §11): it filters what it claims with
 * whereInScope(…, scope) on a `test_clock_id` column, takes "now" only from `deps.clock`, and
 * has `nextDueAt`. A test clock's advance runs exactly the jobs with `nextDueAt`; the others
 * (housekeeping: retries, purges, counts) run in real time only and ignore `scope`.
 */
export interface Job {
  name: string;
  batchSize: number;
  run(deps: Deps, scope?: JobScope): Promise<number>;
  /**
   * The earliest instant strictly after `after` at which a row of `scope` becomes due for
   * this job (the instant `run` at that time would first claim it), or null when none will
   * without some other change. The advance steps from one such instant to the next.
   */
  nextDueAt?(deps: Deps, scope: JobScope, after: Date): Promise<Date | null>;
}

/**
 * `query` filtered to `scope`'s rows by their `column` (e.g. `'subscriptions.test_clock_id'`):
 * `IS NULL` for real time (cheap: the existing due-work indexes stay in use and clock rows
 * are few), `= id` for a test clock (the partial `<table>_by_test_clock` index).
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- works for any select
export function whereInScope<QB extends SelectQueryBuilder<any, any, any>>(
  query: QB,
  column: string,
  scope: JobScope = REAL_TIME,
): QB {
  const ref = sql.ref(column);
  return (scope.testClockId === null ? query.where(ref, 'is', null) : query.where(ref, '=', scope.testClockId)) as QB;
}

/** The earliest of `times` (ISO 8601 or null), as a Date; null when all are null. */
export function earliest(times: readonly (string | null | undefined)[]): Date | null {
  let best: number | null = null;
  for (const time of times) {
    if (time === null || time === undefined) continue;
    const ms = new Date(time).getTime();
    if (best === null || ms < best) best = ms;
  }
  return best === null ? null : new Date(best);
}

export interface WorkerLogger {
  error(object: object, message: string): void;
}

export interface StopOptions {
  /**
   * How long services may finish in-flight work before it is aborted and its leases given
   * back (default: wait for it all; webhook attempts are bounded by WEBHOOK_TIMEOUT).
   */
  graceMs?: number;
}

/** A long-running part of the worker with its own loop and concurrency. */
export interface RunningService {
  start(): void;
  /** Stops taking work, drains or aborts what is in flight (StopOptions), releases resources. */
  stop(options?: StopOptions): Promise<void>;
}

/** A service kind, registered in worker/jobs.ts SERVICES; created when the worker starts. */
export interface WorkerService {
  name: string;
  create(deps: Deps, log: WorkerLogger): RunningService;
}
