// Processing stored events in batches (SPEC §5): each inbox row's effects and the row's own
// "processed" mark commit in one transaction, so they happen exactly once. The common case
// (nothing fails) runs the batch as one plain transaction; if anything throws, the batch is
// rolled back and run again with a savepoint per row, so one failing row is rolled back alone
// and recorded failed (retried by the worker unless a retry cannot help) while the others
// commit. What one row does is inbox.processing.ts's.
import type { Kysely, Transaction } from 'kysely';
import { deferCounts, flushCounts } from '../db/counts.ts';
import type { Database } from '../db/database.ts';
import { isRetryableConflict } from '../db/errors.ts';
import { TRANSACTION_ATTEMPTS, waitBeforeRerun } from '../db/transaction.ts';
import { AlreadyFinishedError, deferFinishes, flushFinishes, lockInboxRow } from './inbox.ts';
import { UnusableEventError } from '../providers/provider.ts';
import type { ProviderEventRow } from '../db/tables/provider-events.table.ts';
import {
  prepareBatch,
  type ProcessingContext,
  type ProcessingOutcome,
  processInboxRow,
  recordFailedAttempt,
} from './inbox.processing.ts';

/** Where processing reports failures (a pino logger fits). */
export interface ProcessingLog {
  warn(object: object, message: string): void;
  error(object: object, message: string): void;
}

/** A stored row to process, with its already-parsed body when the caller has it (saves a parse). */
export interface RowToProcess {
  id: string;
  /** The row as stored, when the caller just stored it (saves reading it back). */
  row?: ProviderEventRow;
  body?: unknown;
  /** Where to report this row's failure (e.g. its request's logger); else the batch's log. */
  log?: ProcessingLog;
}

/**
 * Processes each item in `trx`; any failure throws (the caller rolls back). `prepare`: lock
 * the stored rows' references and read what the rows need for all of them first
 * (prepareBatch) — the reads only when every item comes with its stored row (a row locked
 * here could touch what the others were answered about).
 */
async function processAll(
  trx: Transaction<Database>,
  ctx: ProcessingContext,
  items: readonly RowToProcess[],
  prepare: boolean,
): Promise<ProcessingOutcome[]> {
  const outcomes: ProcessingOutcome[] = [];
  // A row read from the inbox (the worker, a redelivery) is locked first, so processors of
  // one row queue behind each other (the later ones then skip it). A row the caller just
  // stored is processed as stored, without that round trip: nobody else takes it
  // before its lease ends but a redelivery, and finishInboxRow's check (the status still as
  // read; on PostgreSQL the update waits for any other transaction on the row) rolls back
  // whichever processor loses such a race.
  const stored = items.flatMap((item) => (item.row ? [{ row: item.row, body: item.body }] : []));
  const prepared = prepare ? await prepareBatch(trx, ctx, stored, stored.length === items.length) : undefined;
  for (const item of items) {
    const row = item.row ?? (await lockInboxRow(trx, item.id));
    outcomes.push(
      row ? await processInboxRow(trx, prepared?.ctx ?? ctx, row, item.body, prepared?.events.get(row.id)) : 'skipped',
    );
  }
  return outcomes;
}

/**
 * Processes each item in its own savepoint: a failing item rolls back alone and is recorded.
 * A row that loses a race (PostgreSQL deadlock or serialization failure) runs again — but
 * first what the rows before it did commits and a new transaction starts: the locks those
 * rows took (their payment references, subscriptions) would otherwise still be held, so the
 * same cycle would form again at every rerun until the row failed for good (a link row
 * failing leaves one charge counted as two payments, SPEC §5).
 */
async function processIsolated<T>(
  db: Kysely<Database>,
  ctx: ProcessingContext,
  work: (trx: Transaction<Database>) => Promise<T>,
  items: readonly RowToProcess[],
  log: ProcessingLog | undefined,
): Promise<[T, ProcessingOutcome[]]> {
  let trx = await db.startTransaction().execute();
  const outcomes: ProcessingOutcome[] = [];
  try {
    const head = await work(trx);
    for (const item of items) {
      for (let run = 1; ; run += 1) {
        const savepoint = await trx.savepoint('event').execute();
        try {
          outcomes.push(...(await processAll(savepoint, ctx, [item], false)));
          await savepoint.releaseSavepoint('event').execute();
          break;
        } catch (error) {
          await savepoint.rollbackToSavepoint('event').execute();
          await savepoint.releaseSavepoint('event').execute();
          // A row that lost a race did nothing wrong: it runs again at once rather than waiting
          // for the worker's retry (SPEC §5, the same rule as services), in a new transaction
          // that holds no lock of the rows before it (see above).
          if (isRetryableConflict(error) && run < TRANSACTION_ATTEMPTS) {
            await trx.commit().execute();
            trx = await db.startTransaction().execute();
            await waitBeforeRerun(run);
            continue;
          }
          if (error instanceof AlreadyFinishedError) {
            outcomes.push('skipped');
            break;
          }
          await recordFailedAttempt(trx, ctx.clock, item.id, error);
          const itemLog = item.log ?? log;
          if (error instanceof UnusableEventError) {
            itemLog?.warn({ providerEventId: item.id, reason: error.message }, 'provider event cannot be used');
          } else {
            itemLog?.error({ err: error, providerEventId: item.id }, 'provider event processing failed');
          }
          outcomes.push('failed');
          break;
        }
      }
    }
    await trx.commit().execute();
    return [head, outcomes];
  } catch (error) {
    await trx
      .rollback()
      .execute()
      .catch(() => {});
    throw error;
  }
}

/**
 * Runs `work` (the SQLite receiver stores new events there) and then processes `items`, all
 * in ONE transaction, and commits. Returns what `work` returned and one outcome per item.
 * A failing item is rolled back alone and recorded `failed` (logged on its `log`) while the
 * rest commits (see the header). Throws when `work` or the transaction itself fails (then
 * nothing of it committed, and its items stay due for the worker; the rows processed before a
 * row that lost a race and ran again in a new transaction — processIsolated — stay committed).
 */
export async function runThenProcessEvents<T>(
  db: Kysely<Database>,
  ctx: ProcessingContext,
  work: (trx: Transaction<Database>) => Promise<T>,
  items: readonly RowToProcess[],
  log?: ProcessingLog,
): Promise<[T, ProcessingOutcome[]]> {
  try {
    return await db.transaction().execute(async (trx) => {
      // The batch's payments, refunds, customers and events move their totals once, at the
      // end, and its rows are marked finished together.
      deferCounts(trx);
      deferFinishes(trx);
      const head = await work(trx);
      // A row another processor finished meanwhile fails the batch (AlreadyFinishedError, at
      // the latest from flushFinishes); the rerun below then finds it, row by row, and skips
      // it alone.
      const outcomes = await processAll(trx, ctx, items, true);
      await flushFinishes(trx);
      await flushCounts(trx);
      return [head, outcomes] as [T, ProcessingOutcome[]];
    });
  } catch (error) {
    if (items.length === 0) throw error;
    return processIsolated(db, ctx, work, items, log);
  }
}

/** Processes inbox rows in one transaction and commits; see runThenProcessEvents. */
export async function processEvents(
  db: Kysely<Database>,
  ctx: ProcessingContext,
  items: readonly RowToProcess[],
  log?: ProcessingLog,
): Promise<ProcessingOutcome[]> {
  if (items.length === 0) return [];
  const [, outcomes] = await runThenProcessEvents(db, ctx, async () => undefined, items, log);
  return outcomes;
}
