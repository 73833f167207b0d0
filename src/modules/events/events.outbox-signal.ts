// A doorbell for the outbox, so the webhook worker sends a new event at once instead of at
// its next poll. Two wires:
// - in-process: listeners run on a later turn of the event loop. On SQLite that is after the
//   emitting transaction released the one connection, so their queries see its commit.
// - PostgreSQL: NOTIFY inside the emitting transaction, which PostgreSQL delivers at commit
//   (and never for a rollback) to every process LISTENing — other workers included.
// It is only a shortcut: the worker's poll (WORKER_POLL_INTERVAL) still guarantees progress.
import type { Transaction } from 'kysely';
import { isPostgres } from '../../db/column-types.ts';
import type { Database } from '../../db/database.ts';
import { notifyAtCommit } from '../../db/notify.ts';

type Listener = () => void;

const listeners = new Set<Listener>();
let scheduled = false;

/** PostgreSQL NOTIFY channel of a schema's outbox (one per schema: tests share a database). */
export function outboxChannel(schema: string): string {
  return `billing_outbox_${schema}`;
}

/** Calls `listener` (soon, once per burst) after outbox activity in this process. Returns the unsubscribe. */
export function onOutboxActivity(listener: Listener): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/** Rings the in-process wire only (listeners run on a later turn of the event loop). */
export function notifyOutboxActivity(): void {
  if (scheduled || listeners.size === 0) return;
  scheduled = true;
  setImmediate(() => {
    scheduled = false;
    for (const listener of listeners) listener();
  });
}

/**
 * Rings from inside `trx` (an event was written, or a delivery made due): on PostgreSQL a
 * NOTIFY that fires at commit (one per transaction), on SQLite the in-process wire.
 */
export async function ringOutbox(trx: Transaction<Database>): Promise<void> {
  if (!isPostgres(trx)) return notifyOutboxActivity();
  // Not the in-process wire too: it would ring before the commit, for a pass that finds nothing.
  if (rung.has(trx)) return;
  rung.add(trx);
  await notifyAtCommit(trx, 'billing_outbox_');
}

/** Transactions that already sent their NOTIFY (one is enough per commit). */
const rung = new WeakSet<Transaction<Database>>();
