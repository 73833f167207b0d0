// What a module hands the background worker (SPEC §7): a Job (due work, claimed in small
// batches) or a WorkerService (work with its own loop). Modules define them; the worker's
// list (worker/jobs.ts) is the one place that names them all; worker/runner.ts runs them.
// The contract sits below the worker so modules never import the worker.
import type { Deps } from '../deps.ts';

/** One kind of due work. `run` handles at most `batchSize` items and returns how many. */
export interface Job {
  name: string;
  batchSize: number;
  run(deps: Deps): Promise<number>;
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
