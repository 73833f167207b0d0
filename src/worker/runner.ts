// The background worker (SPEC §7): every WORKER_POLL_INTERVAL it runs each registered job;
// a job claims a small batch of due work and reports how many items it handled. A job that
// filled its batch runs again at once, so a backlog drains without waiting for the poll.
// Work that must not wait behind the others (webhook delivery: many slow requests at once)
// is a service instead: started with the worker, running its own loop, drained on stop().
import { countAsWorker } from '../db/pg-traffic.ts';
import type { Deps } from '../deps.ts';
import type { Job, RunningService, StopOptions, WorkerLogger, WorkerService } from './job.ts';

/** Most batches one job may run back to back in one tick, so others get their turn. */
const MAX_BATCHES_PER_TICK = 20;

export class Worker {
  readonly #deps: Deps;
  readonly #jobs: readonly Job[];
  readonly #log: WorkerLogger;
  readonly #services: readonly WorkerService[];
  #runningServices: RunningService[] = [];
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<unknown> | undefined;
  #stopped = true;

  /**
   * `jobs` and `services` come from the worker's one list (jobs.ts JOBS and SERVICES; tests
   * pass fewer). `runOnce` never runs the services; start() does.
   */
  constructor(deps: Deps, jobs: readonly Job[], log: WorkerLogger, services: readonly WorkerService[] = []) {
    this.#deps = deps;
    this.#jobs = jobs;
    this.#log = log;
    this.#services = services;
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

  /**
   * Starts polling every WORKER_POLL_INTERVAL, and every service. What they send to
   * PostgreSQL counts as the worker's (db/pg-traffic.ts countAsWorker).
   */
  start(): void {
    if (!this.#stopped) return;
    countAsWorker(() => this.#start());
  }

  #start(): void {
    this.#stopped = false;
    this.#runningServices = this.#services.map((service) => service.create(this.#deps, this.#log));
    for (const service of this.#runningServices) service.start();
    const tick = () => {
      this.#running = this.runOnce().finally(() => {
        this.#running = undefined;
        if (!this.#stopped) this.#timer = setTimeout(tick, this.#deps.config.workerPollIntervalMs);
      });
    };
    this.#timer = setTimeout(tick, 0);
  }

  /**
   * Stops polling and waits for the batch in progress; stops every service, which drains its
   * in-flight work (webhook requests: finished, or after `graceMs` aborted with their leases
   * given back, so another worker sends them). Resolves when all of it is done.
   */
  async stop(options: StopOptions = {}): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    const services = this.#runningServices;
    this.#runningServices = [];
    await Promise.all([this.#running, ...services.map((service) => service.stop(options))]);
  }
}
