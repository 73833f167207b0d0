// The inbox (SPEC §5 "Store, then process"): every verified event is committed here,
// unique on (provider, event key), before anything acts on it. A repeat of a stored key is
// a duplicate delivery and is not stored again.
import type { Kysely, Transaction } from 'kysely';
import { compiledQueries, compiledQuery, type Param } from '../db/compiled-queries.ts';
import type { Database } from '../db/database.ts';
import { claimRows, forUpdate } from '../db/locking.ts';
import { isRetryableConflict } from '../db/errors.ts';
import { TRANSACTION_ATTEMPTS, waitBeforeRerun } from '../db/transaction.ts';
import type { Clock } from '../shared/clock.ts';
import { newId } from '../shared/ids.ts';
import { canMove, RETRIED_STATUSES } from './inbox.status.ts';
import type { InboxStatus, ProviderEventRow } from '../db/tables/provider-events.table.ts';
import { withoutNul } from '../providers/provider-values.ts';

/**
 * How long after receipt the worker may pick up a row the request has not finished
 * processing (a crash between the two commits). The request normally finishes in ms; if
 * both ever process one row, the second finds it finished and rolls back (finishInboxRow).
 */
export const RECEIVE_LEASE_MS = 10_000;

/** How long a row the worker claimed is the claimer's before another worker may take it. */
export const CLAIM_LEASE_MS = 5 * 60_000;

/**
 * Inbox rows left unprocessed (RETRIED_STATUSES) whose `next_attempt_at` ≤ `now` (ISO 8601),
 * oldest due first: what claimDueInboxRows claims, and the worker's due probe (worker/job.ts).
 */
export function dueInboxRowsQuery(db: Kysely<Database>, now: string) {
  return db
    .selectFrom('provider_events')
    .select('id')
    .where('next_attempt_at', 'is not', null)
    .where('next_attempt_at', '<=', now)
    .where('status', 'in', RETRIED_STATUSES)
    .orderBy('next_attempt_at');
}

/**
 * Claims up to `limit` due inbox rows for the worker's retry (SPEC §5, §7): rows still to be
 * processed (RETRIED_STATUSES) whose `next_attempt_at` has come by `clock`, oldest due first,
 * skipping rows another transaction holds (claimRows), and moves their `next_attempt_at`
 * CLAIM_LEASE_MS ahead — in one short transaction of its own, so two workers never process
 * one row at once and a crashed worker's rows come due again. Returns the claimed `pev_…` ids.
 */
export async function claimDueInboxRows(db: Kysely<Database>, clock: Clock, limit: number): Promise<string[]> {
  return db.transaction().execute(async (trx) => {
    const now = clock.now();
    const rows = await claimRows(dueInboxRowsQuery(trx, now.toISOString()).limit(limit), trx).execute();
    const ids = rows.map((row) => row.id);
    if (ids.length > 0) {
      await trx
        .updateTable('provider_events')
        .set({ next_attempt_at: new Date(now.getTime() + CLAIM_LEASE_MS).toISOString() })
        .where('id', 'in', ids)
        .execute();
    }
    return ids;
  });
}

/** A verified event about to be stored. */
export interface IncomingEvent {
  provider: string;
  /** At most 255 characters, no U+0000 (eventKey/bodyHashKey make sure of both). */
  key: string;
  /** Stored with U+0000 written as `\u0000`, cut to 255 characters. */
  type: string;
  /** The verified body, exactly as received. */
  payload: string;
}

/**
 * Commits `events` to the inbox in ONE statement (a multi-row INSERT … ON CONFLICT DO NOTHING,
 * atomic on its own: no BEGIN/COMMIT round trips). Returns, per event, the stored row, or
 * null when (provider, key) was already stored — before, or earlier in `events` (a
 * duplicate). Rows are inserted in (provider, key) order, so two instances storing
 * overlapping batches take the unique index in one order; a deadlock or serialization loser
 * runs again (transaction.ts). Throws when the statement fails: then nothing was stored and
 * the caller answers 5xx.
 */
export async function storeEvents(
  db: Kysely<Database>,
  clock: Clock,
  events: readonly IncomingEvent[],
): Promise<(ProviderEventRow | null)[]> {
  if (events.length === 0) return [];
  const rows = events.map((event) => newInboxRow(clock, event));
  const order = rows.map((_, i) => i);
  // Stable: of two events with one key, the first to arrive is stored.
  order.sort((a, b) => compareKeys(rows[a]!, rows[b]!));
  for (let run = 1; ; run++) {
    try {
      const inserted = await db
        .insertInto('provider_events')
        .values(order.map((i) => rows[i]!))
        .onConflict((oc) => oc.columns(['provider', 'event_key']).doNothing())
        .returning('id')
        .execute();
      const ids = new Set(inserted.map((row) => row.id));
      return rows.map((row) => (ids.has(row.id) ? row : null));
    } catch (error) {
      if (run >= TRANSACTION_ATTEMPTS || !isRetryableConflict(error)) throw error;
      await waitBeforeRerun(run);
    }
  }
}

function compareKeys(a: ProviderEventRow, b: ProviderEventRow): number {
  if (a.provider !== b.provider) return a.provider < b.provider ? -1 : 1;
  if (a.event_key === b.event_key) return 0;
  return a.event_key < b.event_key ? -1 : 1;
}

/** The inbox row `event` becomes when stored now (received, leased to the request for RECEIVE_LEASE_MS). */
function newInboxRow(clock: Clock, event: IncomingEvent): ProviderEventRow {
  const now = clock.now();
  return {
    id: newId('providerEvent'),
    provider: event.provider,
    event_key: event.key,
    // The type is the provider's text, unchecked: a NUL in it must not stop the event
    // being stored (PostgreSQL text refuses U+0000), so it is kept spelled out.
    event_type: withoutNul(event.type).slice(0, 255),
    payload: event.payload,
    status: 'received',
    error: null,
    attempts: 0,
    received_at: now.toISOString(),
    processed_at: null,
    next_attempt_at: new Date(now.getTime() + RECEIVE_LEASE_MS).toISOString(),
    held_reference: null,
  };
}

/** Inserts `events` in `trx` (see storeEvents); stored once the caller's transaction commits. */
export async function insertEvents(
  trx: Transaction<Database>,
  clock: Clock,
  events: readonly IncomingEvent[],
): Promise<(ProviderEventRow | null)[]> {
  const rows: (ProviderEventRow | null)[] = [];
  for (const event of events) {
    const row = newInboxRow(clock, event);
    const inserted = await insertInboxRow.executeWrite(trx, row);
    rows.push(inserted > 0n ? row : null);
  }
  return rows;
}

/** One inbox row unless its (provider, key) is stored: compiled once (the SQLite request path). */
const insertInboxRow = compiledQuery((db, param: Param<ProviderEventRow>) =>
  db
    .insertInto('provider_events')
    .values({
      id: param('id'),
      provider: param('provider'),
      event_key: param('event_key'),
      event_type: param('event_type'),
      payload: param('payload'),
      status: param('status'),
      error: param('error'),
      attempts: param('attempts'),
      received_at: param('received_at'),
      processed_at: param('processed_at'),
      next_attempt_at: param('next_attempt_at'),
      held_reference: param('held_reference'),
    })
    .onConflict((oc) => oc.columns(['provider', 'event_key']).doNothing()),
);

/**
 * The id of the stored row for (`provider`, `key`) when it still needs processing (never
 * processed, or failed with a retry due): a provider's redelivery is a good moment to
 * process it now instead of waiting for the worker.
 */
export async function findUnfinishedRow(
  db: Kysely<Database>,
  provider: string,
  key: string,
): Promise<string | undefined> {
  const row = await db
    .selectFrom('provider_events')
    .select('id')
    .where('provider', '=', provider)
    .where('event_key', '=', key)
    .where((eb) =>
      eb.or([
        eb('status', '=', 'received'),
        eb.and([eb('status', '=', 'failed'), eb('next_attempt_at', 'is not', null)]),
      ]),
    )
    .executeTakeFirst();
  return row?.id;
}

const inboxRowForUpdate = compiledQuery((db, param: Param<{ id: string }>) =>
  forUpdate(db.selectFrom('provider_events').selectAll().where('id', '=', param('id')), db),
);

/** The inbox row `id`, locked on PostgreSQL so one processor at a time handles it. */
export async function lockInboxRow(trx: Transaction<Database>, id: string): Promise<ProviderEventRow | undefined> {
  return inboxRowForUpdate.executeTakeFirst(trx, { id });
}

const heldRowsForUpdate = compiledQuery((db, param: Param<{ provider: string; reference: string }>) =>
  forUpdate(
    db
      .selectFrom('provider_events')
      .selectAll()
      .where('provider', '=', param('provider'))
      .where('held_reference', '=', param('reference'))
      .where('status', '=', 'held')
      .orderBy('received_at')
      .orderBy('id'),
    db,
  ),
);

/** The `held` rows of `provider` waiting for the payment `reference`, oldest first, locked. */
export async function lockHeldRows(
  trx: Transaction<Database>,
  provider: string,
  reference: string,
): Promise<ProviderEventRow[]> {
  return heldRowsForUpdate.execute(trx, { provider, reference });
}

/**
 * lockHeldRows for a batch of references in ONE statement: the `held` rows waiting for any
 * of `references`, locked, grouped by referenceKey-style key `provider` + U+0000 + reference
 * (a reference without held rows maps to an empty list), each list oldest first.
 */
export async function lockHeldRowsOf(
  trx: Transaction<Database>,
  references: readonly { provider: string; reference: string }[],
): Promise<Map<string, ProviderEventRow[]>> {
  const held = new Map<string, ProviderEventRow[]>();
  if (references.length === 0) return held;
  for (const { provider, reference } of references) held.set(`${provider}\u0000${reference}`, []);
  const byProvider = new Map<string, string[]>();
  for (const { provider, reference } of references) {
    byProvider.set(provider, [...(byProvider.get(provider) ?? []), reference]);
  }
  const rows = await forUpdate(
    trx
      .selectFrom('provider_events')
      .selectAll()
      .where((eb) =>
        eb.or(
          [...byProvider].map(([provider, refs]) =>
            eb.and([eb('provider', '=', provider), eb('held_reference', 'in', refs)]),
          ),
        ),
      )
      .where('status', '=', 'held')
      .orderBy('received_at')
      .orderBy('id'),
    trx,
  ).execute();
  for (const row of rows) held.get(`${row.provider}\u0000${row.held_reference}`)?.push(row);
  return held;
}

/**
 * Makes the `held` rows of `provider` waiting for the payment reference `from` wait for `to`
 * instead: `from` became an alias of `to` (SPEC §5, Stripe invoice → PaymentIntent).
 */
export async function repointHeldRows(
  trx: Transaction<Database>,
  provider: string,
  from: string,
  to: string,
): Promise<void> {
  await trx
    .updateTable('provider_events')
    .set({ held_reference: to })
    .where('provider', '=', provider)
    .where('held_reference', '=', from)
    .where('status', '=', 'held')
    .execute();
}

type InboxChanges = Partial<Omit<ProviderEventRow, 'id' | 'provider' | 'event_key' | 'payload' | 'received_at'>>;

/**
 * `update provider_events set <the changed columns> where id = ? [and status = ?]`,
 * compiled once per set of columns (a handful: each caller changes a fixed set).
 */
const inboxRowUpdates = compiledQueries(
  (variant: { columns: readonly string[]; fromStatus: boolean }) =>
    `${variant.columns.join(',')}${variant.fromStatus ? '|status' : ''}`,
  (db, param: Param<Record<string, unknown>>, variant) => {
    const set = Object.fromEntries(variant.columns.map((column) => [column, param(column)])) as InboxChanges;
    const query = db
      .updateTable('provider_events')
      .set(set)
      .where('id', '=', param('id') as string);
    return variant.fromStatus ? query.where('status', '=', param('from') as InboxStatus) : query;
  },
);

/** Runs the inbox update of `changes` on row `id` (and only while it is in status `from`, when given). */
function updateInbox(
  trx: Transaction<Database>,
  id: string,
  changes: InboxChanges,
  from?: InboxStatus,
): Promise<bigint> {
  // As Kysely's set(): a change given as undefined is no change.
  const columns = Object.keys(changes)
    .filter((column) => changes[column as keyof InboxChanges] !== undefined)
    .sort();
  return inboxRowUpdates.get({ columns, fromStatus: from !== undefined }).executeWrite(trx, { ...changes, id, from });
}

/** Updates an inbox row's processing state. */
export async function updateInboxRow(trx: Transaction<Database>, id: string, changes: InboxChanges): Promise<void> {
  await updateInbox(trx, id, changes);
}

/** Thrown when a row was finished by another processor while this one worked on it. */
export class AlreadyFinishedError extends Error {
  constructor(id: string) {
    super(`provider event ${id} was finished by another processor`);
    this.name = 'AlreadyFinishedError';
  }
}

/**
 * Moves row `id` out of `from` (the status this processor read) to `changes`, a move the
 * status table allows (inbox.status.ts; anything else is a programming error). Throws
 * AlreadyFinishedError when the row is no longer in `from`: another processor got there
 * first, and the caller's transaction (or savepoint) must roll back its effects. On
 * PostgreSQL the update waits for that other transaction, so the check cannot be raced.
 * In a transaction under deferFinishes a move out of processing (not `held`) is collected
 * and made, with the same check, by flushFinishes.
 */
export async function finishInboxRow(
  trx: Transaction<Database>,
  id: string,
  from: ProviderEventRow['status'],
  changes: InboxChanges & { status: ProviderEventRow['status'] },
): Promise<void> {
  if (!canMove(from, changes.status)) throw new Error(`an inbox row cannot move from ${from} to ${changes.status}`);
  const collected = deferredFinishes.get(trx);
  // A held row is written at once: the batch's later rows look for held rows by status.
  if (collected && changes.status !== 'held') {
    collected.push({ id, from, changes });
    return;
  }
  if ((await updateInbox(trx, id, changes, from)) !== 1n) throw new AlreadyFinishedError(id);
}

interface Finish {
  id: string;
  from: InboxStatus;
  changes: InboxChanges;
}

/** Finishes collected per transaction between deferFinishes and flushFinishes. */
const deferredFinishes = new WeakMap<Transaction<Database>, Finish[]>();

/**
 * From now on, finishInboxRow in `trx` (this transaction object, not its savepoints) collects
 * the rows it moves out of processing; flushFinishes(trx) moves them, one statement for all
 * rows that move alike (the same changes from the same status: usually the whole batch).
 * For a batch that processes many rows in one transaction (inbox.batches.ts). The
 * caller MUST call flushFinishes before committing; a rollback just drops them.
 */
export function deferFinishes(trx: Transaction<Database>): void {
  if (!deferredFinishes.has(trx)) deferredFinishes.set(trx, []);
}

/**
 * Makes the moves collected since deferFinishes(trx) and stops collecting. Throws
 * AlreadyFinishedError (naming one of them) when any row was no longer in the status it was
 * read in — another processor finished it, or the batch met it twice — so the caller's
 * transaction rolls back and its rows are run again one by one (inbox.batches.ts).
 */
export async function flushFinishes(trx: Transaction<Database>): Promise<void> {
  const collected = deferredFinishes.get(trx);
  deferredFinishes.delete(trx);
  if (!collected) return;
  const groups = new Map<string, Finish[]>();
  for (const finish of collected) {
    const key = JSON.stringify([finish.from, Object.entries(finish.changes).sort()]);
    groups.set(key, [...(groups.get(key) ?? []), finish]);
  }
  for (const group of groups.values()) {
    const { from, changes } = group[0]!;
    const ids = group.map((finish) => finish.id);
    const result = await trx
      .updateTable('provider_events')
      .set(changes)
      .where('id', 'in', ids)
      .where('status', '=', from)
      .executeTakeFirst();
    if (result.numUpdatedRows !== BigInt(ids.length)) throw new AlreadyFinishedError(ids[0]!);
  }
}
