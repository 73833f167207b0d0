// The SQLite receiver: SQLite has one writer and every commit is an fsync, so concurrent
// requests share commits in a pipeline. Each cycle is ONE transaction that stores the events
// that arrived since the last cycle and processes the events the last cycle stored. An event
// is thus committed to the inbox in one commit and processed in a later one, as SPEC §5
// "Store, then process" requires, at one fsync per cycle for the whole batch. A request is
// answered after its processing commit.
import type { Deps } from '../deps.ts';
import { findUnfinishedRow, insertEvents } from './inbox.ts';
import { runThenProcessEvents } from './inbox.batches.ts';
import type { ProcessingOutcome } from './inbox.processing.ts';
import type { ProviderEventRow } from '../db/tables/provider-events.table.ts';
import type { IncomingDelivery, Receipt, Receiver } from './inbox.receipt.ts';

/** Most new events one cycle stores (bounds a cycle's transaction time). */
const MAX_BATCH = 64;

interface Waiter {
  delivery: IncomingDelivery;
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

/** The pipeline (see the header). One per app; cycles never overlap. */
class SqlitePipeline implements Receiver {
  readonly #deps: Deps;
  #arrived: Waiter[] = [];
  #stored: Stored[] = [];
  #running: Promise<void> | undefined;

  constructor(deps: Deps) {
    this.#deps = deps;
  }

  receive(delivery: IncomingDelivery): Promise<Receipt> {
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
    let outcomes: ProcessingOutcome[];
    try {
      [[rows, retryIds], outcomes] = await runThenProcessEvents(
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

/** The SQLite request path's receiver (see the header). */
export function createSqliteReceiver(deps: Deps): Receiver {
  return new SqlitePipeline(deps);
}
