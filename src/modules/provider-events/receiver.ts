// Receiving one verified event on the request path: store it (committed), then process it
// (committed), then answer (SPEC §5 "Store, then process").
//
// PostgreSQL: each request runs its own two transactions; the server groups commits itself.
// SQLite has one writer and every commit is an fsync, so concurrent requests share commits
// in a pipeline: each cycle is ONE transaction that stores the events that arrived since
// the last cycle and processes the events the last cycle stored. An event is thus committed
// to the inbox in one commit and processed in a later one, as the contract requires, at one
// fsync per cycle for the whole batch. A request is answered after its processing commit.
import type { Deps } from '../../deps.ts';
import { findUnfinishedRow, insertEvents, type IncomingEvent, storeEvents } from './inbox.ts';
import { type Outcome, type ProcessingLog, processEvents, processEventsAfter } from './processing.ts';
import type { ProviderEventRow } from './provider-events.table.ts';

/** What happened to a received event; `duplicate`: its key was stored before. */
export type Receipt = Outcome | 'duplicate';

export interface Delivery {
  event: IncomingEvent;
  /** The verified body, parsed once by the adapter. */
  body: unknown;
  log: ProcessingLog;
}

/** Most new events one SQLite cycle stores (bounds a cycle's transaction time). */
const MAX_BATCH = 64;

interface Waiter {
  delivery: Delivery;
  resolve(receipt: Receipt): void;
  reject(error: unknown): void;
}

/**
 * A delivery whose fate is known after the next cycle: process its row, or answer
 * `duplicate` — after processing the earlier row it repeats (`retryId`) when that one was
 * never finished (a crash between its commits, or a failure with a retry due).
 */
interface Stored extends Waiter {
  row: ProviderEventRow | null;
  retryId?: string;
}

function logFailure(waiters: readonly Stored[], error: unknown): void {
  for (const waiter of waiters) {
    waiter.delivery.log.error({ err: error, providerEventId: waiter.row?.id }, 'provider event processing failed');
  }
}

/** The SQLite pipeline (see the header). One per app; cycles never overlap. */
class SqlitePipeline {
  readonly #deps: Deps;
  #arrived: Waiter[] = [];
  #stored: Stored[] = [];
  #running: Promise<void> | undefined;

  constructor(deps: Deps) {
    this.#deps = deps;
  }

  receive(delivery: Delivery): Promise<Receipt> {
    return new Promise<Receipt>((resolve, reject) => {
      this.#arrived.push({ delivery, resolve, reject });
      this.#running ??= this.#run();
    });
  }

  /** Resolves once every received event has been answered (for a graceful shutdown). */
  async idle(): Promise<void> {
    while (this.#running) await this.#running;
  }

  async #run(): Promise<void> {
    try {
      while (this.#arrived.length > 0 || this.#stored.length > 0) {
        // node:sqlite is synchronous: a cycle runs as one chain of microtasks, during which
        // no request is read. Yield one event-loop turn, so every request that arrived
        // meanwhile joins this cycle.
        await new Promise<void>((resolve) => setImmediate(resolve));
        await this.#cycle(this.#arrived.splice(0, MAX_BATCH), this.#stored.splice(0));
      }
    } finally {
      this.#running = undefined;
    }
  }

  async #cycle(arrived: Waiter[], stored: Stored[]): Promise<void> {
    const toProcess = stored.filter((waiter) => waiter.row !== null || waiter.retryId !== undefined);
    const items = toProcess.map((waiter) => ({
      id: waiter.row?.id ?? waiter.retryId!,
      row: waiter.row ?? undefined,
      // A retried row is processed from its own stored payload, not the redelivery's.
      body: waiter.row ? waiter.delivery.body : undefined,
      log: waiter.delivery.log,
    }));
    let rows: (ProviderEventRow | null)[];
    let retryIds: (string | undefined)[];
    let outcomes: Outcome[];
    try {
      [[rows, retryIds], outcomes] = await processEventsAfter(
        this.#deps.db,
        this.#deps,
        async (trx) => {
          const events = arrived.map((waiter) => waiter.delivery.event);
          const inserted = await insertEvents(trx, this.#deps.clock, events);
          const retries = await Promise.all(
            inserted.map((row, i) => (row ? undefined : findUnfinishedRow(trx, events[i]!.provider, events[i]!.key))),
          );
          return [inserted, retries] as const;
        },
        items,
      );
    } catch (error) {
      // The new events were not stored: 5xx, the provider retries. The older ones were
      // stored by an earlier commit: 200, and the worker processes them after their lease.
      for (const waiter of arrived) waiter.reject(error);
      logFailure(toProcess, error);
      for (const waiter of stored) waiter.resolve(waiter.row === null ? 'duplicate' : 'failed');
      return;
    }
    let next = 0;
    for (const waiter of stored) {
      if (waiter.row === null && waiter.retryId === undefined) waiter.resolve('duplicate');
      else {
        const outcome = outcomes[next++] ?? 'failed';
        waiter.resolve(waiter.row === null ? 'duplicate' : outcome);
      }
    }
    // Duplicates too are answered after the next commit, so an original stored in this
    // cycle has been processed by the time its duplicate's 200 goes out.
    arrived.forEach((waiter, i) => this.#stored.push({ ...waiter, row: rows[i] ?? null, retryId: retryIds[i] }));
  }
}

async function receiveDirectly(deps: Deps, delivery: Delivery): Promise<Receipt> {
  const [row] = await storeEvents(deps.db, deps.clock, [delivery.event]);
  const retryId = row ? undefined : await findUnfinishedRow(deps.db, delivery.event.provider, delivery.event.key);
  const id = row?.id ?? retryId;
  if (id === undefined) return 'duplicate';
  try {
    const [outcome] = await processEvents(deps.db, deps, [
      { id, row: row ?? undefined, body: row ? delivery.body : undefined, log: delivery.log },
    ]);
    return row ? (outcome ?? 'failed') : 'duplicate';
  } catch (error) {
    // Stored but not processed: still a 200 (SPEC §5); the worker retries after the lease.
    delivery.log.error({ err: error, providerEventId: id }, 'provider event processing failed');
    return row ? 'failed' : 'duplicate';
  }
}

export interface Receiver {
  /**
   * Stores and processes one event; resolves once both committed. Rejects only when the
   * event could not be stored (the caller answers 5xx so the provider retries).
   */
  receive(delivery: Delivery): Promise<Receipt>;
  /** Resolves when no event is in flight: a shutdown waits for it before closing the database. */
  idle(): Promise<void>;
}

/** The request path's receiver for `deps`' database. */
export function createReceiver(deps: Deps): Receiver {
  if (deps.database.dialect === 'sqlite') {
    const pipeline = new SqlitePipeline(deps);
    return { receive: (delivery) => pipeline.receive(delivery), idle: () => pipeline.idle() };
  }
  const inFlight = new Set<Promise<Receipt>>();
  return {
    receive(delivery) {
      const receipt = receiveDirectly(deps, delivery);
      inFlight.add(receipt);
      void receipt.finally(() => inFlight.delete(receipt)).catch(() => {});
      return receipt;
    },
    async idle() {
      await Promise.allSettled([...inFlight]);
    },
  };
}
