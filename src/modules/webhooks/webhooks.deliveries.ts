// Deliveries as the API shows them (SPEC §3): the list of an endpoint's deliveries with
// every attempt, a manual redelivery, and the `webhook.test` event sent to one endpoint only.
import type { Insertable, Kysely, Transaction } from 'kysely';
import type { Param } from '../../db/compiled-queries.ts';
import type { Database } from '../../db/database.ts';
import { forUpdate } from '../../db/locking.ts';
import { transactionWithRetry } from '../../db/transaction.ts';
import { AppError, NotFoundError } from '../../http/errors.ts';
import { defineList, type ListParams, type Page } from '../../http/lists.ts';
import { pickFields } from '../../http/schemas.ts';
import type { Clock } from '../../shared/clock.ts';
import { isIdOf, newId } from '../../shared/ids.ts';
import { markEventsFannedOut } from '../events/events.delivery-state.ts';
import { emitEvent } from '../events/events.service.ts';
import { ringOutbox } from '../events/events.outbox-signal.ts';
import type { Topic } from '../events/events.topics.ts';
import { findEndpoint, lockEndpoint, toEndpoint } from './webhooks.endpoints.ts';
import { type Delivery, type DeliveryAttempt, DELIVERY_SORT_FIELDS, deliverySchema } from './webhooks.schemas.ts';
import type {
  AttemptRow,
  DeliveryRow,
  DeliveryStatus,
  WebhookDeliveriesTable,
} from '../../db/tables/webhooks.table.ts';

export type { Delivery, DeliveryAttempt };

/**
 * A delivery row as the API shows it: `next_attempt_at` only while pending, with its
 * attempts (rows; the response schema serializes their API fields).
 */
function toDelivery(row: DeliveryRow, attempts: AttemptRow[]): Delivery {
  return pickFields(deliverySchema, {
    ...row,
    topic: row.topic as Topic,
    next_attempt_at: row.status === 'pending' ? row.next_attempt_at : null,
    attempts,
  });
}

async function withAttempts(db: Kysely<Database>, rows: DeliveryRow[]): Promise<Delivery[]> {
  if (rows.length === 0) return [];
  const attempts = await db
    .selectFrom('webhook_attempts')
    .selectAll()
    .where(
      'delivery_id',
      'in',
      rows.map((row) => row.id),
    )
    .orderBy('delivery_id')
    .orderBy('number')
    .execute();
  const byDelivery = new Map<string, AttemptRow[]>();
  for (const attempt of attempts) {
    const list = byDelivery.get(attempt.delivery_id) ?? [];
    list.push(attempt);
    byDelivery.set(attempt.delivery_id, list);
  }
  return rows.map((row) => toDelivery(row, byDelivery.get(row.id) ?? []));
}

export interface DeliveryFilters {
  status?: DeliveryStatus;
  event_id?: string;
}

/** A page of the endpoint's deliveries with their attempts. Throws 404 for an unknown endpoint. */
export async function listDeliveries(
  db: Kysely<Database>,
  endpointId: string,
  params: ListParams,
  filters: DeliveryFilters,
): Promise<Page<Delivery>> {
  await findEndpoint(db, endpointId);
  const page = await deliveriesList.page(
    db,
    params,
    // An empty filter value filters nothing, as `?status=` always has.
    { status: filters.status || undefined, event_id: filters.event_id || undefined },
    { endpointId },
  );
  return { data: await withAttempts(db, page.data), meta: page.meta };
}

const deliveriesList = defineList({
  from: (db, param: Param<{ endpointId: string }>) =>
    db.selectFrom('webhook_deliveries').where('endpoint_id', '=', param('endpointId')),
  select: (query) => query.selectAll(),
  sortable: DELIVERY_SORT_FIELDS,
  map: (rows) => rows,
});

async function getDelivery(db: Kysely<Database>, id: string): Promise<Delivery> {
  const row = await db.selectFrom('webhook_deliveries').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  return (await withAttempts(db, [row]))[0]!;
}

function requireEnabled(status: string, id: string): void {
  if (status !== 'enabled') {
    throw new AppError('invalid_state', `webhook endpoint ${id} is disabled; enable it first`);
  }
}

/**
 * Makes the delivery due now, whatever its status (a succeeded one is sent again; a failed
 * one gets one more attempt, then follows the rest of the retry schedule if any is left).
 * Throws 404 when it is not this endpoint's, 422 `invalid_state` when the endpoint is disabled
 * or the delivery is being sent right now.
 */
export async function retryDelivery(
  db: Kysely<Database>,
  clock: Clock,
  endpointId: string,
  deliveryId: string,
): Promise<Delivery> {
  await transactionWithRetry(db, async (trx) => {
    const endpoint = await lockEndpoint(trx, endpointId);
    const query = trx
      .selectFrom('webhook_deliveries')
      .selectAll()
      .where('id', '=', deliveryId)
      .where('endpoint_id', '=', endpointId);
    const row = isIdOf('delivery', deliveryId) ? await forUpdate(query, trx).executeTakeFirst() : undefined;
    if (!row) throw new NotFoundError('delivery', deliveryId);
    requireEnabled(endpoint.status, endpointId);
    const now = clock.now().toISOString();
    if (row.locked_until !== null && row.locked_until > now) {
      throw new AppError('invalid_state', `delivery ${deliveryId} is being sent right now`);
    }
    await trx
      .updateTable('webhook_deliveries')
      .set({ status: 'pending', next_attempt_at: now, locked_until: null, locked_by: null, updated_at: now })
      .where('id', '=', deliveryId)
      .execute();
    await ringOutbox(trx);
  });
  return getDelivery(db, deliveryId);
}

/**
 * A new delivery of event `eventId` (`topic`) to endpoint `endpointId`: pending, due at `now`
 * (ISO 8601, real time), never tried. The one shape fan-out and insertDelivery write.
 */
export function pendingDeliveryRow(
  endpointId: string,
  eventId: string,
  topic: string,
  now: string,
): Insertable<WebhookDeliveriesTable> {
  return {
    id: newId('delivery'),
    endpoint_id: endpointId,
    event_id: eventId,
    topic,
    status: 'pending',
    attempt_count: 0,
    next_attempt_at: now,
    locked_until: null,
    locked_by: null,
    last_attempt_at: null,
    delivered_at: null,
    created_at: now,
    updated_at: now,
  };
}

/** Writes a delivery row for an event to one endpoint, due now (in the caller's transaction). */
export async function insertDelivery(
  trx: Transaction<Database>,
  endpointId: string,
  eventId: string,
  topic: Topic,
  now: string,
): Promise<string> {
  const row = pendingDeliveryRow(endpointId, eventId, topic, now);
  await trx.insertInto('webhook_deliveries').values(row).execute();
  return row.id!;
}

/**
 * Emits a `webhook.test` event (data: the endpoint) and queues it for this endpoint only:
 * the event is written already fanned out, with its one delivery. Throws 404, or 422
 * `invalid_state` for a disabled endpoint.
 */
export async function sendTestEvent(db: Kysely<Database>, clock: Clock, endpointId: string): Promise<Delivery> {
  const deliveryId = await transactionWithRetry(db, async (trx) => {
    const endpoint = await lockEndpoint(trx, endpointId);
    requireEnabled(endpoint.status, endpointId);
    const now = clock.now().toISOString();
    const eventId = await emitEvent(trx, clock, 'webhook.test', toEndpoint(endpoint));
    // Fanned out to this endpoint alone: fan-out skips `webhook.test`.
    await markEventsFannedOut(trx, [eventId], 1, now);
    return insertDelivery(trx, endpointId, eventId, 'webhook.test', now);
  });
  return getDelivery(db, deliveryId);
}
