// Which work read the clock: a response computed from "now" (days overdue, due within a week)
// changes without any write, so the response cache (http/response-cache.ts) must not keep
// it. The service's clock (Deps.clock) notes each read in the record of the work that made
// it, found through AsyncLocalStorage: a read by another request, or by the worker, is not
// this work's.
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Clock } from './clock.ts';

/** Filled in while work runs inside `watchClockReads`. */
export interface ClockReads {
  /** True once the work (or anything it awaited) read the clock. */
  clockRead: boolean;
}

const current = new AsyncLocalStorage<ClockReads>();
const noticing = new WeakSet<Clock>();

/**
 * `clock`, noting every read in the ClockReads of the work running at that moment (none
 * outside `watchClockReads`). createDeps gives the service this clock.
 */
export function noticeClockReads(clock: Clock): Clock {
  if (noticing.has(clock)) return clock;
  const wrapped: Clock = {
    now() {
      const reads = current.getStore();
      if (reads) reads.clockRead = true;
      return clock.now();
    },
  };
  noticing.add(wrapped);
  return wrapped;
}

/** True for a clock made by `noticeClockReads`. */
export function noticesClockReads(clock: Clock): boolean {
  return noticing.has(clock);
}

/**
 * Runs `work` (and everything it starts or awaits) with `reads` as its record: a read of a
 * noticing clock sets `reads.clockRead`. Returns what `work` returns.
 */
export function watchClockReads<T>(reads: ClockReads, work: () => T): T {
  return current.run(reads, work);
}
