// Service transactions that survive losing a race. PostgreSQL may abort a transaction that
// did nothing wrong: one of two that deadlocked (40P01), or one whose snapshot a concurrent
// commit invalidated (40001). Running it again is the documented cure; the client never
// sees it. SQLite never aborts this way (one writer at a time), so there it runs once.
import type { Kysely, Transaction } from 'kysely';
import type { Database } from './database.ts';
import { isRetryableConflict } from './errors.ts';

/** Runs of `work` at most, the first included. */
export const TRANSACTION_ATTEMPTS = 5;
/** Backoff before the second run; doubles for each later one (10, 20, 40, 80 ms), jittered. */
const BACKOFF_BASE_MS = 10;

export interface RetryOptions {
  /** Runs at most (default TRANSACTION_ATTEMPTS). */
  attempts?: number;
  /** Jitter source, [0, 1) (default Math.random). */
  random?: () => number;
}

/**
 * Runs `work` in a transaction and returns its result. When PostgreSQL aborts it with a
 * deadlock (40P01) or serialization failure (40001), the whole transaction runs again after a
 * short jittered backoff (half to all of 10 ms × 2^(run − 1)), up to `attempts` runs; then the
 * last error is thrown. Any other error is thrown at once. `work` must therefore keep its
 * effects inside `trx` (a rolled-back run leaves nothing behind) — which is what every service
 * transaction does anyway. The lock order that makes such aborts rare is in locking.ts.
 */
export async function transactionWithRetry<T>(
  db: Kysely<Database>,
  work: (trx: Transaction<Database>) => Promise<T>,
  options: RetryOptions = {},
): Promise<T> {
  const attempts = options.attempts ?? TRANSACTION_ATTEMPTS;
  const random = options.random ?? Math.random;
  for (let run = 1; ; run++) {
    try {
      return await db.transaction().execute(work);
    } catch (error) {
      if (run >= attempts || !isRetryableConflict(error)) throw error;
      await waitBeforeRerun(run, random);
    }
  }
}

/**
 * Waits before run `run + 1` of work that lost a race (see transactionWithRetry): half to all
 * of 10 ms × 2^(run − 1), jittered by `random` ([0, 1)) so the two losers do not meet again.
 */
export function waitBeforeRerun(run: number, random: () => number = Math.random): Promise<void> {
  const ceiling = BACKOFF_BASE_MS * 2 ** (run - 1);
  return new Promise((resolve) => setTimeout(resolve, ceiling * (0.5 + random() / 2)));
}
