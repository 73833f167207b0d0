// The transactional outbox (SPEC §6): a state change and its event commit together, so
// there is no change without its event and no event without its change.
import { type Compilable, type InsertQueryBuilder, type Kysely, sql, type Transaction } from 'kysely';
import { isPostgres } from '../../db/column-types.ts';
import { compiledQuery, type Param } from '../../db/compiled-queries.ts';
import { insertRows } from '../../db/bulk.ts';
import { addToCount, countRowsOf } from '../../db/counts.ts';
import type { Database } from '../../db/database.ts';
import { NotFoundError } from '../../http/errors.ts';
import { defineList, type ListParams, type Page } from '../../http/lists.ts';
import { pickFields } from '../../http/schemas.ts';
import { currentActor } from '../../shared/actor.ts';
import { type Clock, realClockOf } from '../../shared/clock.ts';
import { isIdOf, newId } from '../../shared/ids.ts';
import { type EventView, eventSchema } from './events.schemas.ts';
import type { EventRow } from '../../db/tables/events.table.ts';
import { ringOutbox } from './events.outbox-signal.ts';
import { eventCustomerId } from './events.customer.ts';
import type { Topic } from './events.topics.ts';

export type { EventView };

/** An events row as the API shows it: `data` parsed from its JSON text, `delivered` computed. */
export function toEventView(row: EventRow): EventView {
  return pickFields(eventSchema, {
    ...row,
    topic: row.topic as Topic,
    data: JSON.parse(row.data),
    actor: row.actor === null ? null : JSON.parse(row.actor),
    delivered: row.delivered_at !== null,
  });
}

/** The outbox insert, compiled once (every state change runs it). */
const insertEventRow = compiledQuery(
  (
    db,
    param: Param<{
      id: string;
      topic: string;
      data: string;
      created_at: string;
      emitted_at: string;
      actor: string | null;
      customer_id: string | null;
    }>,
  ) =>
    db.insertInto('events').values({
      id: param('id'),
      topic: param('topic'),
      data: param('data'),
      created_at: param('created_at'),
      emitted_at: param('emitted_at'),
      actor: param('actor'),
      customer_id: param('customer_id'),
      delivered_at: null,
    }),
);

/**
 * An event's stored columns for `clock`: `data` serialized once (with `test_clock` added on a
 * test clock's time, SPEC §11), `created_at` the clock's time, `emitted_at` the real time,
 * `actor` the console session acting (shared/actor.ts, SPEC §16) or null, `customer_id` the
 * customer the payload is about (events.customer.ts) or null.
 */
function eventValues(
  clock: Clock,
  data: unknown,
): { data: string; created_at: string; emitted_at: string; actor: string | null; customer_id: string | null } {
  // An event a test clock's customer causes names the clock (SPEC §11).
  const payload = clock.testClockId === undefined ? data : { ...(data as object), test_clock: clock.testClockId };
  return {
    data: JSON.stringify(payload),
    created_at: clock.now().toISOString(),
    emitted_at: realClockOf(clock).now().toISOString(),
    actor: actorText(),
    customer_id: eventCustomerId(data),
  };
}

/** The current actor as stored (JSON text), or null. */
function actorText(): string | null {
  const actor = currentActor();
  return actor === undefined ? null : JSON.stringify({ type: actor.type, id: actor.id });
}

/**
 * Writes one event inside the caller's transaction — the same one that writes the state
 * change. `data` is serialized once here; webhook deliveries send these exact bytes.
 * The webhook worker fans it out after the commit (modules/webhooks/webhooks.fan-out.ts). With a
 * test clock's time (`clock.testClockId`, SPEC §11) `data` (an object) gains `test_clock`.
 * Returns the new event id (`evt_…`).
 */
export async function emitEvent(
  trx: Transaction<Database>,
  clock: Clock,
  topic: Topic,
  data: unknown,
): Promise<string> {
  const id = newId('event');
  const values = { id, topic, ...eventValues(clock, data) };
  const collected = deferredEvents.get(trx);
  if (collected) {
    collected.push(values);
    return id;
  }
  await insertEventRow.executeWrite(trx, values);
  await addToCount(trx, 'events', 1);
  await ringOutbox(trx);
  return id;
}

type EventValues = {
  id: string;
  topic: string;
  data: string;
  created_at: string;
  emitted_at: string;
  actor: string | null;
  customer_id: string | null;
};

/** Events collected per transaction between deferEvents and flushEvents. */
const deferredEvents = new WeakMap<Transaction<Database>, EventValues[]>();

/**
 * From now on, emitEvent in `trx` (this transaction object, not its savepoints) collects its
 * rows in memory (ids assigned at once, as always); flushEvents(trx) writes them in
 * multi-row inserts, with one count change and one outbox ring. For a worker batch that
 * emits several events per row (the billing run: a renewal's five). The caller MUST call
 * flushEvents before committing (and before anything in `trx` reads the events table); a
 * rollback drops them with the rest of the transaction.
 */
export function deferEvents(trx: Transaction<Database>): void {
  if (!deferredEvents.has(trx)) deferredEvents.set(trx, []);
}

/**
 * Fans events out as they are written (the webhooks module's fanOutAsWritten, handed in by a
 * worker batch, SPEC §6): given the events about to be inserted, the time they count as fanned
 * out (ISO 8601, real time), how many deliveries each gets, and the write of those deliveries,
 * run once the events exist.
 */
export type InlineFanOut = (
  trx: Transaction<Database>,
  events: readonly { id: string; topic: string; emitted_at: string; created_at: string }[],
) => Promise<{
  fannedOutAt: string;
  deliveries: number;
  pendingOf: (eventId: string) => number;
  write: () => Promise<void>;
}>;

/**
 * Writes the events collected since deferEvents(trx) (see there) and stops collecting. With
 * `fanOut`, they are written fanned out already (their deliveries with them; delivered at once
 * when none is due), so the webhook worker never claims nor rewrites them: a batch's events
 * cost one write each instead of two and a transaction of their own.
 */
export async function flushEvents(trx: Transaction<Database>, fanOut?: InlineFanOut): Promise<void> {
  const collected = deferredEvents.get(trx);
  deferredEvents.delete(trx);
  if (!collected || collected.length === 0) return;
  const plan = fanOut === undefined ? undefined : await fanOut(trx, collected);
  await insertRows(
    trx,
    'events',
    collected.map((row) => {
      if (plan === undefined) return { ...row, delivered_at: null };
      const pending = plan.pendingOf(row.id);
      return {
        ...row,
        fanned_out_at: plan.fannedOutAt,
        pending_deliveries: pending,
        delivered_at: pending === 0 ? plan.fannedOutAt : null,
      };
    }),
  );
  await plan?.write();
  await addToCount(trx, 'events', collected.length);
  // The webhook worker has work only when a delivery waits (or, without `fanOut`, the fan-out).
  if (plan === undefined || plan.deliveries > 0) await ringOutbox(trx);
}

/**
 * Runs `write` — an INSERT, UPDATE or DELETE of the caller's table, without RETURNING — and
 * writes `topic`'s event with `data` (see emitEvent), in the caller's transaction: on
 * PostgreSQL ONE statement (the write as a data-modifying WITH clause, which runs whether or
 * not anything reads it), on SQLite the write, then emitEvent. The state change and its event
 * thus cost one round trip. Returns the new event id (`evt_…`); the write's errors are thrown.
 */
export async function emitEventWith(
  trx: Transaction<Database>,
  clock: Clock,
  write: Compilable<unknown>,
  topic: Topic,
  data: unknown,
): Promise<string> {
  if (!isPostgres(trx)) {
    await trx.executeQuery(write.compile());
    return emitEvent(trx, clock, topic, data);
  }
  const id = newId('event');
  const event = trx.insertInto('events').values({ id, topic, ...eventValues(clock, data), delivered_at: null });
  await sql`with written as (${write}) ${event}`.execute(trx);
  await addToCount(trx, 'events', 1);
  await ringOutbox(trx);
  return id;
}

/**
 * Runs `insert` — an INSERT … ON CONFLICT DO NOTHING … RETURNING into the caller's table —
 * and writes `topic`'s event with `data` only when it inserted a row (the state change and its
 * event, in the caller's transaction), answering nothing. On PostgreSQL this is ONE statement
 * (the insert, the event and its count as data-modifying WITH clauses), one round trip whether
 * the row is new or not — for a writer on the notify path (a saved payment method). On
 * SQLite: the insert, then emitEvent when it returned a row.
 */
export async function emitEventIfInserted(
  trx: Transaction<Database>,
  clock: Clock,
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- any table's insert
  insert: InsertQueryBuilder<Database, any, any>,
  topic: Topic,
  data: unknown,
): Promise<void> {
  if (!isPostgres(trx)) {
    if ((await insert.executeTakeFirst()) !== undefined) await emitEvent(trx, clock, topic, data);
    return;
  }
  const id = newId('event');
  const values = eventValues(clock, data);
  await sql`with inserted as (${insert}),
      emitted as (
        insert into events (id, topic, data, created_at, emitted_at, actor, customer_id, delivered_at)
        select ${id}, ${topic}, ${values.data}, ${values.created_at}, ${values.emitted_at}, ${values.actor},
          ${values.customer_id}, null
        from inserted
        returning id
      )
      ${countRowsOf('events', 'emitted')}`.execute(trx);
  // Rung whether or not the row was new: a NOTIFY for nothing only makes the worker look.
  await ringOutbox(trx);
}

/** The fields `sort_by` may name on GET /api/events. */
export const EVENT_SORT_FIELDS = ['created_at'] as const;

export interface EventFilters {
  topic?: Topic;
  delivered?: boolean;
}

const eventsList = defineList({
  from: (db) => db.selectFrom('events'),
  select: (query) => query.selectAll(),
  sortable: EVENT_SORT_FIELDS,
  keptTotal: 'events',
  map: (rows) => rows.map(toEventView),
});

/** A page of events, newest first by default; filters `topic` and `delivered` (compiled, http/lists.ts). */
export async function listEvents(
  db: Kysely<Database>,
  params: ListParams,
  filters: EventFilters,
): Promise<Page<EventView>> {
  return eventsList.page(db, params, {
    topic: filters.topic,
    delivered_at: filters.delivered === undefined ? undefined : { isNull: !filters.delivered },
  });
}

/** How many of a customer's events its console page shows at most. */
export const CUSTOMER_EVENTS_MAX = 100;

/**
 * The newest `limit` (1–CUSTOMER_EVENTS_MAX) events about customer `customerId`, newest first
 * (created_at, then id): one read of `events_by_customer` (migration 0040), whatever the size
 * of the outbox. Events older than that migration's bounded backfill are not found.
 */
export async function listCustomerEvents(
  db: Kysely<Database>,
  customerId: string,
  limit: number,
): Promise<EventView[]> {
  const rows = await db
    .selectFrom('events')
    .selectAll()
    .where('customer_id', '=', customerId)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(Math.min(Math.max(Math.trunc(limit), 1), CUSTOMER_EVENTS_MAX))
    .execute();
  return rows.map(toEventView);
}

/** One event. Throws 404 `not_found` for unknown or malformed ids. */
export async function getEvent(db: Kysely<Database>, id: string): Promise<EventView> {
  const row = isIdOf('event', id)
    ? await db.selectFrom('events').selectAll().where('id', '=', id).executeTakeFirst()
    : undefined;
  if (!row) throw new NotFoundError('event', id);
  return toEventView(row);
}
