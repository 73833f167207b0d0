// The background worker (SPEC §7): every WORKER_POLL_INTERVAL it runs each registered job;
// a job claims a small batch of due work and reports how many items it handled. A job that
// filled its batch runs again at once, so a backlog drains without waiting for the poll.
// Work that must not wait behind the others (webhook delivery: many slow requests at once)
// is a service instead: started with the worker, running its own loop, drained on stop().
// Each tick first asks, in one statement, which jobs have anything due (Job.dueNow): an idle
// worker then costs one index read per tick, whatever the number of jobs or of clock rows.
// While that probe finds nothing, the worker sleeps past the poll: until the earliest instant
// a row becomes due by time (Job.nextDueAt, Job.wakeAt), the outbox doorbell (a write in this
// process, or on PostgreSQL in any) or IDLE_SLEEP_POLLS polls, whichever comes first.
import { sql } from 'kysely';
import { countAsWorker } from '../db/pg-traffic.ts';
import { REAL_TIME } from '../db/scope.ts';
import type { Deps } from '../deps.ts';
import { onOutboxActivity } from '../modules/events/events.outbox-signal.ts';
import {
  type DueProbe,
  IDLE_SLEEP_POLLS,
  type Job,
  type RunningService,
  type StopOptions,
  type WorkerLogger,
  type WorkerService,
} from './job.ts';

/** Most batches one job may run back to back in one tick, so others get their turn. */
const MAX_BATCHES_PER_TICK = 20;

/**
 * The one statement that asks which of `jobs` have work (Job.dueNow): a row with a column
 * `j<i>` per asked job, true (PostgreSQL) or 1 (SQLite) when `asked[i]`'s claim has a row.
 * `query` is undefined when no job has a probe to ask.
 */
export function dueProbe(deps: Deps, jobs: readonly Job[]) {
  const asked: Job[] = [];
  const probes: DueProbe[] = [];
  for (const job of jobs) {
    const probe = job.dueNow?.(deps) ?? null;
    if (probe === null) continue;
    asked.push(job);
    probes.push(probe);
  }
  const query =
    probes.length === 0
      ? undefined
      : deps.db.selectNoFrom((eb) =>
          probes.map((probe, i) => eb.exists(probe.clearSelect().select(sql.lit(1).as('due')).limit(1)).as(`j${i}`)),
        );
  return { asked, query };
}

export class Worker {
  readonly #deps: Deps;
  readonly #jobs: readonly Job[];
  readonly #log: WorkerLogger;
  readonly #services: readonly WorkerService[];
  #runningServices: RunningService[] = [];
  #timer: NodeJS.Timeout | undefined;
  /** When the pending timer fires (Date.now() ms). */
  #fireAt = 0;
  /** When the last tick ended (Date.now() ms). */
  #lastTickEnd = 0;
  #running: Promise<unknown> | undefined;
  #stopped = true;
  #unsubscribe: (() => void) | undefined;
  /** The last tick's probe found nothing: the probed jobs and the instant they were asked at. */
  #quiet: { asked: readonly Job[]; at: Date } | undefined;
  /** The doorbell rang since the last tick began. */
  #rang = false;

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
    const due = await this.#dueJobs();
    for (const job of this.#jobs) {
      handled[job.name] = 0;
      if (!due.has(job)) continue;
      for (let batch = 0; batch < MAX_BATCHES_PER_TICK; batch++) {
        let count: number;
        try {
          count = await job.run(this.#deps, undefined, this.#log);
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
   * The jobs to run this tick: those without a probe (Job.dueNow), and every job from the
   * first whose probe finds a row — all probes in one statement, outside any transaction, each
   * an EXISTS over its claim's own query (so it reads the claim's due index, LIMIT 1). The jobs
   * before it would have claimed nothing. If the probe fails, every job runs.
   */
  async #dueJobs(): Promise<Set<Job>> {
    const due = new Set<Job>();
    this.#quiet = undefined;
    const at = this.#deps.clock.now();
    const { asked, query } = dueProbe(this.#deps, this.#jobs);
    for (const job of this.#jobs) if (!job.dueNow) due.add(job);
    if (!query) return due;
    try {
      const row: Record<string, unknown> = await query.executeTakeFirstOrThrow();
      // SQLite answers 0/1, PostgreSQL booleans. From the first job with work on, every job
      // runs: one job's work may make a later one's due in the same tick (a renewal's invoice
      // is charged at once), which a probe taken before the tick cannot see.
      const first = asked.findIndex((_, i) => row[`j${i}`] === true || Number(row[`j${i}`]) === 1);
      if (first >= 0) for (const job of this.#jobs.slice(this.#jobs.indexOf(asked[first]!))) due.add(job);
      else if (due.size === 0) this.#quiet = { asked, at };
    } catch (error) {
      this.#log.error({ err: error }, 'worker due probe failed; running every job');
      for (const job of asked) due.add(job);
    }
    return due;
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
    this.#unsubscribe = onOutboxActivity(() => this.#ring());
    this.#schedule(0);
  }

  #schedule(delayMs: number): void {
    clearTimeout(this.#timer);
    this.#fireAt = Date.now() + delayMs;
    this.#timer = setTimeout(() => this.#tick(), delayMs);
  }

  #tick(): void {
    this.#timer = undefined;
    this.#rang = false;
    this.#running = this.runOnce()
      .then(() => this.#sleepMs())
      .then((delay) => {
        this.#running = undefined;
        this.#lastTickEnd = Date.now();
        if (!this.#stopped)
          this.#schedule(this.#rang ? Math.min(delay, this.#deps.config.workerPollIntervalMs) : delay);
      });
  }

  /**
   * How long to sleep after a tick: one poll, unless its probe found nothing — then until
   * the earliest instant a row becomes due by time (each probed job's `nextDueAt` in real
   * time, or `wakeAt`), at least one poll and at most IDLE_SLEEP_POLLS. A row due at t is so
   * handled by t + one poll, as when polling every tick. One poll when any probed job can
   * name no such instant, or when asking fails.
   */
  async #sleepMs(): Promise<number> {
    const poll = this.#deps.config.workerPollIntervalMs;
    const quiet = this.#quiet;
    if (quiet === undefined || this.#stopped) return poll;
    try {
      const wakes = await Promise.all(
        quiet.asked.map((job) => {
          if (job.wakeAt) return job.wakeAt(this.#deps, quiet.at);
          if (job.nextDueAt) return job.nextDueAt(this.#deps, REAL_TIME, quiet.at);
          return Promise.resolve(quiet.at);
        }),
      );
      let sleep = poll * IDLE_SLEEP_POLLS;
      const now = this.#deps.clock.now().getTime();
      for (const wake of wakes) if (wake !== null) sleep = Math.min(sleep, wake.getTime() - now);
      return Math.max(poll, sleep);
    } catch (error) {
      this.#log.error({ err: error }, 'worker wake-up times failed; polling');
      return poll;
    }
  }

  /**
   * The outbox doorbell (events/events.outbox-signal.ts): an idle sleep ends one poll after
   * the last tick ended (at once if that has passed) — work written now is handled as soon
   * as when polling, and a burst of writes costs at most one tick per poll.
   */
  #ring(): void {
    this.#rang = true;
    if (this.#stopped || this.#timer === undefined) return;
    const now = Date.now();
    const at = Math.max(now, this.#lastTickEnd + this.#deps.config.workerPollIntervalMs);
    if (at < this.#fireAt) this.#schedule(at - now);
  }

  /**
   * Stops polling and waits for the batch in progress; stops every service, which drains its
   * in-flight work (webhook requests: finished, or after `graceMs` aborted with their leases
   * given back, so another worker sends them). Resolves when all of it is done.
   */
  async stop(options: StopOptions = {}): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#unsubscribe?.();
    this.#unsubscribe = undefined;
    const services = this.#runningServices;
    this.#runningServices = [];
    await Promise.all([this.#running, ...services.map((service) => service.stop(options))]);
  }
}
