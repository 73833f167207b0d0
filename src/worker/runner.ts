// The background worker (SPEC §7): every WORKER_POLL_INTERVAL it runs each registered job;
// a job claims a small batch of due work and reports how many items it handled. A job that
// filled its batch runs again at once, so a backlog drains without waiting for the poll.
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

/** Most batches one job may run back to back in one tick, so others get their turn. */
const MAX_BATCHES_PER_TICK = 20;

export class Worker {
  readonly #deps: Deps;
  readonly #jobs: readonly Job[];
  readonly #log: WorkerLogger;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<unknown> | undefined;
  #stopped = true;

  constructor(deps: Deps, jobs: readonly Job[], log: WorkerLogger) {
    this.#deps = deps;
    this.#jobs = jobs;
    this.#log = log;
  }

  /**
   * Runs every job until it has no more due work (or MAX_BATCHES_PER_TICK batches).
   * Returns items handled per job name. A failing job is logged and does not stop the others.
   */
  async runOnce(): Promise<Record<string, number>> {
    const handled: Record<string, number> = {};
    for (const job of this.#jobs) {
      handled[job.name] = 0;
      for (let batch = 0; batch < MAX_BATCHES_PER_TICK; batch++) {
        let count: number;
        try {
          count = await job.run(this.#deps);
        } catch (error) {
          this.#log.error({ err: error, job: job.name }, 'worker job failed');
          break;
        }
        handled[job.name] = (handled[job.name] ?? 0) + count;
        if (count < job.batchSize) break;
      }
    }
    return handled;
  }

  /** Starts polling every WORKER_POLL_INTERVAL. */
  start(): void {
    if (!this.#stopped) return;
    this.#stopped = false;
    const tick = () => {
      this.#running = this.runOnce().finally(() => {
        this.#running = undefined;
        if (!this.#stopped) this.#timer = setTimeout(tick, this.#deps.config.workerPollIntervalMs);
      });
    };
    this.#timer = setTimeout(tick, 0);
  }

  /** Stops polling and waits for the batch in progress to finish. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#running;
  }
}
