// The PostgreSQL receiver: concurrent requests share statements (round trips per
// event). Two stages, each taking into a batch everything that queued while its running
// batches ran (at most MAX_BATCH):
//   1. store: ONE multi-row INSERT commits the batch's events to the inbox (inbox.ts
//      storeEvents; a statement is a transaction of its own, so no BEGIN/COMMIT);
//   2. process: ONE transaction processes the stored batch (inbox.batches.ts: a failing
//      row is rolled back alone in its savepoint and recorded failed).
// An event is thus committed to the inbox before anything acts on it, and processed in a
// later commit (SPEC §5 "Store, then process"); the request is answered after that commit.
// The stages overlap: while a batch is processed, the next one is stored. Each stage runs one
// batch at a time while the others queue behind it — a batch's reads are shared by all its
// events (billing/payment-batch.ts), so the fewer batches the fewer round trips per event —
// and a further batch (lane) at once only while a full batch (MAX_BATCH) is waiting: then
// one lane cannot keep up. A lone request pays no wait: its batch starts at once.
import type { Deps } from '../deps.ts';
import { findUnfinishedRow, storeEvents } from './inbox.ts';
import { processEvents } from './inbox.batches.ts';
import type { ProviderEventRow } from '../db/tables/provider-events.table.ts';
import type { IncomingDelivery, Receipt, Receiver } from './inbox.receipt.ts';

/** Most events one batch stores or processes (bounds a transaction's time and locks). */
const MAX_BATCH = 64;
/**
 * Most batches running at once per stage; a second one starts only while a full batch waits
 * (see the header). Each holds a pooled connection (pool: 10).
 */
const STORE_LANES = 2;
const PROCESS_LANES = 4;

interface Waiter {
  delivery: IncomingDelivery;
  resolve(receipt: Receipt): void;
  reject(error: unknown): void;
}

/**
 * A stored delivery waiting to be processed: its new `row`, or — a duplicate — the earlier
 * row it repeats (`retryId`) when that one was never finished (a crash between its commits,
 * or a failure with a retry due): a redelivery is a good moment to process it now.
 */
interface Stored extends Waiter {
  row: ProviderEventRow | null;
  retryId?: string;
}

/**
 * Batches over a queue (see the header): one batch at a time takes what queued while the one
 * before ran (at most MAX_BATCH); up to `lanes` run at once while full batches wait.
 */
class Stage<T> {
  readonly #queue: T[] = [];
  readonly #run: (batch: T[]) => Promise<void>;
  readonly #lanes: number;
  readonly #running = new Set<Promise<void>>();
  /** Lanes running; counted synchronously, so that a lane leaving never strands the queue. */
  #active = 0;

  constructor(lanes: number, run: (batch: T[]) => Promise<void>) {
    this.#lanes = lanes;
    this.#run = run;
  }

  /** One more lane is wanted: none runs, or a full batch waits and a lane is free. */
  #wantsLane(): boolean {
    if (this.#queue.length === 0) return false;
    return this.#active === 0 || (this.#active < this.#lanes && this.#queue.length >= MAX_BATCH);
  }

  /** Queues `items` together (a batch started now takes them all). */
  push(...items: T[]): void {
    this.#queue.push(...items);
    while (this.#wantsLane()) {
      this.#active += 1;
      const lane = this.#lane();
      this.#running.add(lane);
      void lane.finally(() => this.#running.delete(lane)).catch(() => {});
    }
  }

  /**
   * Runs batches while items queue: the last lane running takes whatever is left, another one
   * goes on only while a full batch waits. The check and the leaving are one synchronous step,
   * so two lanes cannot both leave items behind.
   */
  async #lane(): Promise<void> {
    try {
      do await this.#run(this.#queue.splice(0, MAX_BATCH));
      while (this.#queue.length > 0 && (this.#active === 1 || this.#queue.length >= MAX_BATCH));
    } finally {
      this.#active -= 1;
    }
  }

  /** Resolves once the queue is empty and no batch runs. */
  async idle(): Promise<void> {
    while (this.#running.size > 0) await Promise.allSettled([...this.#running]);
  }
}

class PostgresPipeline implements Receiver {
  readonly #deps: Deps;
  readonly #store: Stage<Waiter>;
  readonly #process: Stage<Stored>;

  constructor(deps: Deps) {
    this.#deps = deps;
    this.#store = new Stage(STORE_LANES, (batch) => this.#storeBatch(batch));
    this.#process = new Stage(PROCESS_LANES, (batch) => this.#processBatch(batch));
  }

  receive(delivery: IncomingDelivery): Promise<Receipt> {
    return new Promise<Receipt>((resolve, reject) => this.#store.push({ delivery, resolve, reject }));
  }

  async idle(): Promise<void> {
    await this.#store.idle();
    await this.#process.idle();
  }

  async #storeBatch(batch: Waiter[]): Promise<void> {
    const events = batch.map((waiter) => waiter.delivery.event);
    let rows: (ProviderEventRow | null)[];
    try {
      rows = await storeEvents(this.#deps.db, this.#deps.clock, events);
    } catch (error) {
      // Nothing was stored: 5xx, the provider retries.
      for (const waiter of batch) waiter.reject(error);
      return;
    }
    const stored = await Promise.all(
      batch.map(async (waiter, i): Promise<Stored | undefined> => {
        const row = rows[i] ?? null;
        if (row) return { ...waiter, row };
        const { provider, key } = events[i]!;
        const retryId = await findUnfinishedRow(this.#deps.db, provider, key).catch(() => undefined);
        if (retryId !== undefined) return { ...waiter, row: null, retryId };
        waiter.resolve('duplicate');
        return undefined;
      }),
    );
    // One push: the whole stored batch is processed together.
    this.#process.push(...stored.filter((item) => item !== undefined));
  }

  async #processBatch(batch: Stored[]): Promise<void> {
    const items = batch.map((waiter) => ({
      id: waiter.row?.id ?? waiter.retryId!,
      row: waiter.row ?? undefined,
      // A retried row is processed from its own stored payload, not the redelivery's.
      body: waiter.row ? waiter.delivery.body : undefined,
      log: waiter.delivery.log,
    }));
    try {
      const outcomes = await processEvents(this.#deps.db, this.#deps, items);
      batch.forEach((waiter, i) => waiter.resolve(waiter.row ? (outcomes[i] ?? 'failed') : 'duplicate'));
    } catch (error) {
      // Stored but not processed: still a 200 (SPEC §5); the worker retries after the lease.
      for (const waiter of batch) {
        waiter.delivery.log.error(
          { err: error, providerEventId: waiter.row?.id ?? waiter.retryId },
          'provider event processing failed',
        );
        waiter.resolve(waiter.row ? 'failed' : 'duplicate');
      }
    }
  }
}

/** The PostgreSQL request path's receiver (see the header). */
export function createPostgresReceiver(deps: Deps): Receiver {
  return new PostgresPipeline(deps);
}
