// What the request path hands a receiver (inbox.receiver.ts) and gets back: the contract that keeps
// storage commits, batching and savepoints out of the route (SPEC §5 "Store, then process").
import type { IncomingEvent } from './inbox.ts';
import type { ProcessingLog } from './inbox.batches.ts';
import type { ProcessingOutcome } from './inbox.processing.ts';

/** What happened to a received event; `duplicate`: its key was stored before. */
export type Receipt = ProcessingOutcome | 'duplicate';

/** A verified provider request, about to be stored and processed. */
export interface IncomingDelivery {
  event: IncomingEvent;
  /** The verified body, parsed once by the adapter. */
  body: unknown;
  log: ProcessingLog;
}

/** Stores and processes verified events for the notify route (inbox.receiver.ts picks one per database). */
export interface Receiver {
  /**
   * Stores and processes one event; resolves once both committed. Rejects only when the
   * event could not be stored (the caller answers 5xx so the provider retries).
   */
  receive(delivery: IncomingDelivery): Promise<Receipt>;
  /** Resolves when no event is in flight: a shutdown waits for it before closing the database. */
  idle(): Promise<void>;
}
