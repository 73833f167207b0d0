// Fan-out (SPEC §6): each committed event becomes one delivery per enabled endpoint whose
// `events` match (or `"*"`), exactly once. A batch of events is claimed (SKIP LOCKED on
// PostgreSQL, so several workers split the work), its deliveries written and the events marked
// fanned out in ONE transaction: a crash rolls the whole batch back, nothing half-done remains,
// and the (event, endpoint) unique constraint makes a double write impossible anyway. The claim
// reads the endpoints in its statement, and the deliveries travel with the marks.
import { type Insertable, type Kysely, sql, type Transaction } from 'kysely';
import type { Database } from '../../db/database.ts';
import { claimRows } from '../../db/locking.ts';
import type { Clock } from '../../shared/clock.ts';
import { pendingDeliveryRow } from './webhooks.deliveries.ts';
import { markEventsFannedOut, markEventsFannedOutWith } from '../events/events.delivery-state.ts';
import type { InlineFanOut } from '../events/events.service.ts';
import type { WebhookDeliveriesTable } from '../../db/tables/webhooks.table.ts';

const INSERT_CHUNK = 500;

/** An event as fan-out reads it. */
interface FanOutEvent {
  id: string;
  topic: string;
  emitted_at: string | null;
  created_at: string;
}

/** A row of the claim: a claimed event (`text`: its topic) or an enabled endpoint (`text`: its topics, JSON). */
interface ClaimedRow {
  kind: 'event' | 'endpoint';
  id: string;
  text: string;
  emitted_at: string | null;
  created_at: string;
}

interface Subscriber {
  id: string;
  created_at: string;
  all: boolean;
  topics: ReadonlySet<string>;
}

/** An enabled endpoint as fan-out matches it: `events` is its topics' JSON text. */
function toSubscriber(id: string, events: string, createdAt: string): Subscriber {
  const topics = JSON.parse(events) as string[];
  return { id, created_at: createdAt, all: topics.includes('*'), topics: new Set(topics) };
}

/**
 * The deliveries of `events` to `subscribers` (the fan-out rule below, SPEC §6), pending and
 * due at `now` (ISO 8601, real time), and the events grouped by how many deliveries each got.
 */
function deliveriesOf(
  events: readonly FanOutEvent[],
  subscribers: readonly Subscriber[],
  now: string,
): { rows: Insertable<WebhookDeliveriesTable>[]; eventsByCount: Map<number, string[]> } {
  const rows: Insertable<WebhookDeliveriesTable>[] = [];
  const eventsByCount = new Map<number, string[]>();
  for (const event of events) {
    let count = 0;
    // Rows written before `emitted_at` existed were stamped with real time.
    const emittedAt = event.emitted_at ?? event.created_at;
    if (event.topic !== 'webhook.test') {
      for (const endpoint of subscribers) {
        if (endpoint.created_at > emittedAt) continue;
        if (!endpoint.all && !endpoint.topics.has(event.topic)) continue;
        count += 1;
        rows.push(pendingDeliveryRow(endpoint.id, event.id, event.topic, now));
      }
    }
    const group = eventsByCount.get(count);
    if (group) group.push(event.id);
    else eventsByCount.set(count, [event.id]);
  }
  return { rows, eventsByCount };
}

/**
 * Fans out up to `limit` events not fanned out yet, oldest first. An endpoint receives the
 * events written from its own creation on, in real time (not an older backlog): an event's
 * `emitted_at`, never its `created_at`, which a test clock may have stamped before the
 * endpoint existed (SPEC §6, §11). `webhook.test` never fans
 * out: its one delivery is written with it (webhooks.deliveries.ts). An event with no
 * delivery due is delivered at once. Returns how many events were fanned out.
 */
export async function fanOutEvents(db: Kysely<Database>, clock: Clock, limit: number): Promise<number> {
  // Most passes find nothing: look first, without taking SQLite's write lock for it.
  const waiting = await db.selectFrom('events').select('id').where('fanned_out_at', 'is', null).limit(1).execute();
  if (waiting.length === 0) return 0;
  return db.transaction().execute(async (trx) => {
    // The claim and the enabled endpoints in ONE statement (one round trip): the claimed
    // events as a WITH clause (a locking read cannot be a UNION's branch), the endpoints read
    // in the same statement, so after the claim as before.
    const claim = claimRows(
      trx
        .selectFrom('events')
        .select(['id', 'topic', 'emitted_at', 'created_at'])
        .where('fanned_out_at', 'is', null)
        .orderBy('created_at')
        .orderBy('id')
        .limit(limit),
      trx,
    );
    const claimed: ClaimedRow[] = await trx
      .with('claimed', () => claim)
      .selectFrom('claimed')
      .select([sql<ClaimedRow['kind']>`'event'`.as('kind'), 'id', 'topic as text', 'emitted_at', 'created_at'])
      .unionAll(
        trx
          .selectFrom('webhook_endpoints')
          .select([
            sql<ClaimedRow['kind']>`'endpoint'`.as('kind'),
            'id',
            'events as text',
            sql<string | null>`null`.as('emitted_at'),
            'created_at',
          ])
          .where('status', '=', 'enabled'),
      )
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    const events = claimed
      .filter((row) => row.kind === 'event')
      .map((row) => ({ id: row.id, topic: row.text, emitted_at: row.emitted_at, created_at: row.created_at }));
    if (events.length === 0) return 0;

    const subscribers = claimed
      .filter((row) => row.kind === 'endpoint')
      .map((endpoint) => toSubscriber(endpoint.id, endpoint.text, endpoint.created_at));

    const now = clock.now().toISOString();
    const { rows, eventsByCount } = deliveriesOf(events, subscribers, now);

    const inserts = deliveryInserts(trx, rows);
    // The last chunk of deliveries travels with the first group's marks (one statement).
    const last = inserts.pop();
    for (const insert of inserts) await insert.execute();
    const groups = [...eventsByCount];
    const [count, ids] = groups.shift()!;
    if (last) await markEventsFannedOutWith(trx, last, ids, count, now);
    else await markEventsFannedOut(trx, ids, count, now);
    for (const [count, ids] of groups) await markEventsFannedOut(trx, ids, count, now);
    return events.length;
  });
}

/** The inserts of delivery `rows`, in chunks; an (event, endpoint) pair written already is skipped. */
function deliveryInserts(trx: Transaction<Database>, rows: readonly Insertable<WebhookDeliveriesTable>[]) {
  const inserts = [];
  for (let i = 0; i < rows.length; i += INSERT_CHUNK) {
    inserts.push(
      trx
        .insertInto('webhook_deliveries')
        .values(rows.slice(i, i + INSERT_CHUNK))
        .onConflict((oc) => oc.columns(['event_id', 'endpoint_id']).doNothing()),
    );
  }
  return inserts;
}

/**
 * The InlineFanOut of a worker batch (events.service.ts flushEvents): the batch's events are
 * fanned out by the rule of fanOutEvents (above, SPEC §6) to the endpoints enabled as the
 * batch's transaction reads them, and written fanned out at `clock`'s time (real time), so
 * the webhook worker never claims them. An endpoint created while the batch runs is the
 * same race as with fanOutEvents: it receives what is emitted after its creation commits.
 */
export function fanOutAsWritten(clock: Clock): InlineFanOut {
  return async (trx, events) => {
    const endpoints = await trx
      .selectFrom('webhook_endpoints')
      .select(['id', 'events', 'created_at'])
      .where('status', '=', 'enabled')
      .execute();
    const now = clock.now().toISOString();
    const subscribers = endpoints.map((endpoint) => toSubscriber(endpoint.id, endpoint.events, endpoint.created_at));
    const { rows, eventsByCount } = deliveriesOf(events, subscribers, now);
    const pending = new Map<string, number>();
    for (const [count, ids] of eventsByCount) if (count > 0) for (const id of ids) pending.set(id, count);
    return {
      fannedOutAt: now,
      deliveries: rows.length,
      pendingOf: (eventId) => pending.get(eventId) ?? 0,
      write: async () => {
        for (const insert of deliveryInserts(trx, rows)) await insert.execute();
      },
    };
  };
}
