// The webhook worker (SPEC §6–7): a loop that fans events out, claims due deliveries up to
// its free slots (bounded overall and per endpoint, so one slow receiver cannot hold up the
// others), sends them concurrently, and records outcomes in batches (one commit for many).
// It wakes on its poll interval, on the outbox doorbell (in-process, or PostgreSQL NOTIFY from
// any process), and when a slot frees up.
// stop() stops claiming, waits for in-flight sends (or aborts them after a grace period and
// gives their leases back), records what is left, and closes the connections.
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Deps } from '../deps.ts';
import { IDLE_SLEEP_POLLS, type StopOptions, type WorkerService } from './job.ts';
import { notifyOutboxActivity, onOutboxActivity } from '../modules/events/events.outbox-signal.ts';
import { type AttemptResponse, WebhookClient } from '../modules/webhooks/webhooks.delivery-client.ts';
import {
  type ClaimedDelivery,
  claimDueDeliveries,
  nextDeliveryDueAt,
  type Outcome,
  recordOutcomes,
} from '../modules/webhooks/webhooks.delivery-leases.ts';
import { fanOutEvents } from '../modules/webhooks/webhooks.fan-out.ts';
import { OutboxListener } from '../modules/webhooks/outbox-listener.ts';
import { webhookBody, webhookHeaders } from '../modules/webhooks/webhooks.signing.ts';
import { parseWebhookUrl, UnsafeUrlError } from '../modules/webhooks/webhooks.url-safety.ts';
import { webhookNetwork } from '../modules/webhooks/webhooks.network.ts';

export interface DispatcherLogger {
  error(object: object, message: string): void;
}

export interface DispatcherOptions {
  /** Most requests in flight in this process (default 64). */
  maxInFlight?: number;
  /** Most requests in flight to one endpoint from this process (default 8). */
  maxPerEndpoint?: number;
  /**
   * Events fanned out per transaction (default 1,000): a month's renewals write several events
   * each, and each transaction costs a commit.
   */
  fanOutBatch?: number;
  /** Outcomes recorded per transaction at most (default 500). */
  recordBatch?: number;
  /** Written to `locked_by` (default host:pid:random). */
  owner?: string;
  /** Jitter source for the retry schedule, [0, 1) (default Math.random). */
  random?: () => number;
  log?: DispatcherLogger;
}

interface InFlight {
  endpointId: string;
  controller: AbortController;
  done: Promise<void>;
}

/**
 * Extra time a lease lasts beyond WEBHOOK_TIMEOUT, for recording the outcome (a batched
 * commit, a busy database). A request never outlives the timeout, so the margin only has to
 * cover the recording; it is also how long a crashed worker's deliveries wait to go out again.
 */
const LEASE_MARGIN_MS = 15_000;
/**
 * Batching windows. Outcomes wait this long to be recorded together (one commit for many;
 * it delays only the database's view, not any request). A freed slot waits this long for
 * others to free up, so one pass refills several instead of one claim per finished request.
 */
const RECORD_WINDOW_MS = 10;
const REFILL_WINDOW_MS = 2;

const silent: DispatcherLogger = { error: () => {} };

/** The webhook worker of one process. Create, then `start()`; or drive it with `runUntilIdle()`. */
export class WebhookDispatcher {
  readonly #deps: Deps;
  readonly #client: WebhookClient;
  readonly #maxInFlight: number;
  readonly #maxPerEndpoint: number;
  readonly #fanOutBatch: number;
  readonly #recordBatch: number;
  readonly #owner: string;
  readonly #random: () => number;
  readonly #log: DispatcherLogger;
  readonly #inFlight = new Map<string, InFlight>();
  readonly #perEndpoint = new Map<string, number>();
  #outcomes: Outcome[] = [];
  #flushing: Promise<void> | undefined;
  #loop: Promise<void> | undefined;
  #stopped = true;
  #closed = false;
  #wanted = false;
  #starved = false;
  #refillTimer: NodeJS.Timeout | undefined;
  #wake: (() => void) | undefined;
  #unsubscribe: (() => void) | undefined;
  #listener: OutboxListener | undefined;

  constructor(deps: Deps, options: DispatcherOptions = {}) {
    this.#deps = deps;
    this.#maxInFlight = options.maxInFlight ?? 64;
    this.#maxPerEndpoint = options.maxPerEndpoint ?? 8;
    this.#fanOutBatch = options.fanOutBatch ?? 1_000;
    this.#recordBatch = options.recordBatch ?? 500;
    this.#owner = options.owner ?? `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
    this.#random = options.random ?? Math.random;
    this.#log = options.log ?? silent;
    this.#client = new WebhookClient({
      network: webhookNetwork(deps),
      allowPrivateCidrs: deps.config.webhookAllowPrivateCidrs,
      timeoutMs: deps.config.webhookTimeoutMs,
      connectionsPerOrigin: this.#maxPerEndpoint,
    });
  }

  /** Requests in flight right now. */
  get inFlight(): number {
    return this.#inFlight.size;
  }

  /**
   * One pass: fan out a batch of events, then claim due deliveries for the free slots and
   * start sending them (not awaited). `more` says work is probably left right now.
   */
  async pass(): Promise<{ fannedOut: number; started: number; more: boolean }> {
    const { db, clock, config } = this.#deps;
    const fannedOut = await fanOutEvents(db, clock, this.#fanOutBatch);
    const free = this.#maxInFlight - this.#inFlight.size;
    const room = new Map<string, number>();
    const fullEndpoints: string[] = [];
    for (const [endpointId, count] of this.#perEndpoint) {
      const left = this.#maxPerEndpoint - count;
      room.set(endpointId, left);
      if (left <= 0) fullEndpoints.push(endpointId);
    }
    const claimed = await claimDueDeliveries(db, clock, {
      limit: free,
      fullEndpoints,
      room,
      defaultRoom: this.#maxPerEndpoint,
      owner: this.#owner,
      leaseMs: config.webhookTimeoutMs + LEASE_MARGIN_MS,
    });
    for (const delivery of claimed) this.#send(delivery);
    // While work flows (or slots are short), a finishing send rings for the next pass.
    this.#starved = claimed.length > 0 || free <= 0 || fullEndpoints.length > 0;
    const more = fannedOut === this.#fanOutBatch || (free > 0 && claimed.length === free);
    return { fannedOut, started: claimed.length, more };
  }

  /**
   * Runs passes until one finds nothing to do, waiting each time for the sends it started
   * and their records. For tests, the bench and one-off draining; never while `start()`ed.
   */
  async runUntilIdle(): Promise<void> {
    for (;;) {
      const { fannedOut, started } = await this.pass();
      await this.#settle();
      await new Promise((resolve) => setImmediate(resolve));
      if (fannedOut === 0 && started === 0) return;
    }
  }

  /** Starts the loop (poll every WORKER_POLL_INTERVAL, or sooner when woken). */
  start(): void {
    if (!this.#stopped || this.#closed) return;
    this.#stopped = false;
    this.#unsubscribe = onOutboxActivity(() => this.#ring());
    const { config, database } = this.#deps;
    if (config.database.kind === 'postgres' && database.schema !== undefined) {
      this.#listener = new OutboxListener({
        url: config.database.url,
        schema: database.schema,
        // Through the in-process wire: this dispatcher hears it, and so does the worker's idle sleep (runner.ts).
        onRing: () => notifyOutboxActivity(),
        retryMs: config.workerPollIntervalMs,
        log: this.#log,
      });
      this.#listener.start();
    }
    this.#loop = this.#run();
  }

  /**
   * Stops claiming and drains: in-flight requests finish, or after `graceMs` are aborted
   * and their leases given back (no attempt is recorded for those); then the rest is
   * recorded and the connections closed. Without `graceMs` it waits for every request,
   * which the per-attempt WEBHOOK_TIMEOUT bounds.
   */
  async stop(options: StopOptions = {}): Promise<void> {
    this.#stopped = true;
    this.#unsubscribe?.();
    await this.#listener?.stop();
    clearTimeout(this.#refillTimer);
    this.#refillTimer = undefined;
    this.#ring();
    await this.#loop;
    if (options.graceMs !== undefined && this.#inFlight.size > 0) {
      let timer: NodeJS.Timeout | undefined;
      const grace = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, options.graceMs);
      });
      await Promise.race([this.#allSent(), grace]);
      clearTimeout(timer);
      for (const flight of this.#inFlight.values()) flight.controller.abort();
    }
    await this.#settle();
    if (!this.#closed) {
      this.#closed = true;
      await this.#client.close();
    }
  }

  async #run(): Promise<void> {
    while (!this.#stopped) {
      let more = false;
      let quiet = false;
      const at = this.#deps.clock.now();
      try {
        const pass = await this.pass();
        more = pass.more;
        quiet = pass.fannedOut === 0 && pass.started === 0 && this.#inFlight.size === 0;
      } catch (error) {
        this.#log.error({ err: error }, 'webhook pass failed');
      }
      if (this.#stopped) break;
      // SQLite runs queries synchronously: yield to I/O between passes so sends, their
      // responses and the API in this process are never starved by a backlog.
      if (more) await new Promise((resolve) => setImmediate(resolve));
      else await this.#idle(quiet ? await this.#quietMs(at) : this.#deps.config.workerPollIntervalMs);
    }
  }

  /**
   * After a pass that found nothing (SPEC §7): sleep until the next delivery may come due
   * (nextDeliveryDueAt, from the pass's `at`), at least one poll, at most IDLE_SLEEP_POLLS.
   * A new event rings at once (the doorbell); one poll if asking fails.
   */
  async #quietMs(at: Date): Promise<number> {
    const poll = this.#deps.config.workerPollIntervalMs;
    try {
      const next = await nextDeliveryDueAt(this.#deps.db, at);
      const until = next === null ? poll * IDLE_SLEEP_POLLS : next.getTime() - this.#deps.clock.now().getTime();
      return Math.max(poll, Math.min(poll * IDLE_SLEEP_POLLS, until));
    } catch (error) {
      this.#log.error({ err: error }, 'webhook wake-up time failed; polling');
      return poll;
    }
  }

  /** Sleeps `ms`, or less when rung; returns at once if rung since the last sleep. */
  #idle(ms: number): Promise<void> {
    if (this.#wanted) {
      this.#wanted = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.#wake = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.#wake = done;
    });
  }

  #ring(): void {
    if (this.#wake) this.#wake();
    else this.#wanted = true;
  }

  #ringSoon(): void {
    if (this.#refillTimer) return;
    this.#refillTimer = setTimeout(() => {
      this.#refillTimer = undefined;
      this.#ring();
    }, REFILL_WINDOW_MS);
  }

  #send(delivery: ClaimedDelivery): void {
    const controller = new AbortController();
    this.#perEndpoint.set(delivery.endpointId, (this.#perEndpoint.get(delivery.endpointId) ?? 0) + 1);
    const done = this.#attempt(delivery, controller.signal)
      .then(
        (outcome) => {
          this.#outcomes.push(outcome);
        },
        (error: unknown) => this.#log.error({ err: error, delivery: delivery.id }, 'webhook attempt failed'),
      )
      .finally(() => {
        this.#inFlight.delete(delivery.id);
        const left = (this.#perEndpoint.get(delivery.endpointId) ?? 1) - 1;
        if (left <= 0) this.#perEndpoint.delete(delivery.endpointId);
        else this.#perEndpoint.set(delivery.endpointId, left);
        this.#flushSoon();
        if (this.#starved) this.#ringSoon(); // a slot is free and due work may be waiting for it
      });
    this.#inFlight.set(delivery.id, { endpointId: delivery.endpointId, controller, done });
  }

  async #attempt(delivery: ClaimedDelivery, signal: AbortSignal): Promise<Outcome> {
    const attemptedAt = this.#deps.clock.now();
    let response: AttemptResponse;
    try {
      // The stored url passed this at creation; checking again catches a changed config.
      parseWebhookUrl(delivery.url);
      const body = webhookBody(delivery.topic, delivery.data);
      const headers = webhookHeaders(delivery.eventId, body, delivery.secret, attemptedAt);
      response = await this.#client.send({ url: delivery.url, headers, body }, signal);
    } catch (error) {
      if (!(error instanceof UnsafeUrlError)) throw error;
      response = {
        statusCode: null,
        retryAfter: undefined,
        body: null,
        error: `blocked: ${error.message}`,
        aborted: false,
        durationMs: 0,
      };
    }
    if (response.aborted) return { kind: 'release', delivery, owner: this.#owner };
    return { kind: 'attempt', delivery, owner: this.#owner, attemptedAt, response };
  }

  /** Records queued outcomes, one transaction per batch, one batch at a time. */
  #flushSoon(): void {
    if (this.#flushing || this.#outcomes.length === 0) return;
    this.#flushing = this.#flush().finally(() => {
      this.#flushing = undefined;
      this.#flushSoon();
    });
  }

  async #flush(): Promise<void> {
    if (this.#outcomes.length < this.#recordBatch && !this.#stopped) {
      await new Promise((resolve) => setTimeout(resolve, RECORD_WINDOW_MS));
    }
    const batch = this.#outcomes.splice(0, this.#recordBatch);
    try {
      const { db, clock, config } = this.#deps;
      await recordOutcomes(db, clock, { config, random: this.#random }, batch);
    } catch (error) {
      this.#log.error({ err: error, count: batch.length }, 'recording webhook attempts failed');
      if (this.#stopped) return; // the leases run out and the deliveries are sent again
      this.#outcomes.unshift(...batch);
      await new Promise((resolve) => setTimeout(resolve, this.#deps.config.workerPollIntervalMs));
    }
  }

  #allSent(): Promise<unknown> {
    return Promise.all([...this.#inFlight.values()].map((flight) => flight.done));
  }

  /** Waits until nothing is in flight and every outcome is recorded (or given up on). */
  async #settle(): Promise<void> {
    while (this.#inFlight.size > 0 || this.#flushing || this.#outcomes.length > 0) {
      await this.#allSent();
      this.#flushSoon();
      await this.#flushing;
    }
  }
}

/** The worker service that runs webhook delivery (registered in worker/jobs.ts). */
export const webhookDeliveryService: WorkerService = {
  name: 'webhook_delivery',
  create: (deps, log) => new WebhookDispatcher(deps, { log }),
};
