// What the background worker runs (SPEC §7): a Job (due work, claimed in small batches) or a
// WorkerService (work with its own loop). Each lives in worker/<name>.jobs.ts and calls the
// billing core or a record module; worker/jobs.ts names them all; worker/runner.ts runs them.
// Where due rows are claimed (JobScope, whereInScope) is a database matter: db/scope.ts.
import type { SelectQueryBuilder } from 'kysely';
import type { Database } from '../db/database.ts';
import type { Deps } from '../deps.ts';
import type { JobScope } from '../db/scope.ts';

/** A select over the database's tables, whatever it selects (a due probe: only whether it has a row counts). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- only its rows' existence is read
export type DueProbe = SelectQueryBuilder<Database, any, any>;

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
  /**
   * `log`: where a row that fails alone is reported (db/row-failures.ts): the worker's log;
   * none in tests that call a job directly.
   */
  run(deps: Deps, scope?: JobScope, log?: WorkerLogger): Promise<number>;
  /**
   * The earliest instant strictly after `after` at which a row of `scope` becomes due for
   * this job (the instant `run` at that time would first claim it), or null when none will
   * without some other change. The advance steps from one such instant to the next.
   */
  nextDueAt?(deps: Deps, scope: JobScope, after: Date): Promise<Date | null>;
  /**
   * For a clock-aware job whose work holds leases in real time (a charge's or a refund's
   * provider call):
   * asked by a test clock's advance once nothing more is due up to its target (SPEC §11).
   * Makes the scope's work whose lease lapsed in real time (its worker died) due at
   * `deps.clock.now()` and returns how many (the advance runs the instant again), and the real
   * time at which the earliest lease still live ends (the advance waits for it), or null.
   */
  resumeLapsed?(deps: Deps, scope: JobScope): Promise<{ resumed: number; heldUntil: Date | null }>;
  /**
   * Real time only: the rows `run` would claim at `deps.clock.now()` (its claim's own query
   * and predicate, or a superset of them; no lock), or null when it certainly has nothing to
   * do (e.g. its feature is off). The runner asks every job's probe in ONE statement per
   * tick (runner.ts) and runs only the jobs whose probe has a row, so an idle worker costs
   * one index read per tick instead of a transaction per job. A job without it runs every tick.
   */
  dueNow?(deps: Deps): DueProbe | null;
  /**
   * Real time only, for a job with `dueNow` and without `nextDueAt`: the earliest instant
   * strictly after `after` at which its probe could first find a row without another write
   * (a lease lapsing, a retry or an expiry coming due), or null when none will. An idle
   * worker sleeps until the earliest of these and the clock-aware jobs' `nextDueAt` (runner.ts);
   * a job with a probe and neither keeps the worker polling every WORKER_POLL_INTERVAL.
   */
  wakeAt?(deps: Deps, after: Date): Promise<Date | null>;
}

/**
 * Longest idle sleep of the worker and of the webhook dispatcher, in WORKER_POLL_INTERVALs
 * (SPEC §7): work written without a doorbell this process hears (another process on SQLite;
 * a lost LISTEN connection on PostgreSQL) waits at most this long plus one pass. Rows due by
 * time never wait for it (Job.wakeAt, nextDeliveryDueAt).
 */
export const IDLE_SLEEP_POLLS = 10;

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
