// Applies subscription transitions: the only writer of `subscriptions.status`. Each change
// consults the transition table, writes the row and emits its event in the caller's
// transaction (SPEC §4, §6 outbox).
import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../../db/database.ts';
import { forUpdate } from '../../db/locking.ts';
import { NotFoundError } from '../../http/errors.ts';
import { pickFields } from '../../http/schemas.ts';
import type { Clock } from '../../shared/clock.ts';
import { isIdOf } from '../../shared/ids.ts';
import { emitEvent } from '../events/events.service.ts';
import type { Topic } from '../events/events.topics.ts';
import { isEntitled, type LifecycleEvent, nextStatus, type SubscriptionStatus } from './subscriptions.status.ts';
import { type Subscription, subscriptionSchema } from './subscriptions.schemas.ts';
import type { SubscriptionRow, SubscriptionsTable } from '../../db/tables/subscriptions.table.ts';

export type { Subscription };

/**
 * A subscriptions row as the API shows it: `entitled` computed from the status,
 * `cancel_at_period_end` as a boolean (SQLite stores 1/0), `metadata` parsed.
 */
export function toSubscription(row: SubscriptionRow): Subscription {
  return pickFields(subscriptionSchema, {
    ...row,
    entitled: isEntitled(row.status),
    cancel_at_period_end: Boolean(row.cancel_at_period_end),
    metadata: JSON.parse(row.metadata),
  });
}

/** Thrown when the transition table forbids `event` in the subscription's state. */
export class ForbiddenTransitionError extends Error {
  readonly status: SubscriptionStatus;
  readonly event: LifecycleEvent;
  constructor(status: SubscriptionStatus, event: LifecycleEvent) {
    super(`${event} is not allowed for a ${status} subscription`);
    this.name = 'ForbiddenTransitionError';
    this.status = status;
    this.event = event;
  }
}

/**
 * Reads a subscription inside `trx`, locked on PostgreSQL so concurrent changes queue and
 * each sees the state the previous one left. Throws 404 for unknown or malformed ids.
 */
export async function lockSubscription(trx: Transaction<Database>, id: string): Promise<SubscriptionRow> {
  const row = isIdOf('subscription', id)
    ? await forUpdate(trx.selectFrom('subscriptions').selectAll().where('id', '=', id), trx).executeTakeFirst()
    : undefined;
  if (!row) throw new NotFoundError('subscription', id);
  return row;
}

export type SubscriptionChanges = Partial<
  Omit<SubscriptionsTable, 'id' | 'customer_id' | 'plan_id' | 'status' | 'created_at' | 'updated_at' | 'metadata'>
>;

/**
 * Moves `row` by `event` per the transition table, applying `changes` to the other fields,
 * and emits the transition's topic with the resulting subscription — all in `trx`.
 * Throws ForbiddenTransitionError (and writes nothing) when the table has no entry.
 */
export async function transitionSubscription(
  trx: Transaction<Database>,
  clock: Clock,
  row: SubscriptionRow,
  event: LifecycleEvent,
  changes: SubscriptionChanges = {},
): Promise<Subscription> {
  const transition = nextStatus(row.status, event);
  if (!transition) throw new ForbiddenTransitionError(row.status, event);
  const updated: SubscriptionRow = {
    ...row,
    ...changes,
    status: transition.to,
    updated_at: clock.now().toISOString(),
  };
  await trx
    .updateTable('subscriptions')
    .set({ ...changes, status: updated.status, updated_at: updated.updated_at })
    .where('id', '=', row.id)
    .execute();
  const subscription = toSubscription(updated);
  await emitEvent(trx, clock, transition.topic, subscription);
  return subscription;
}

/**
 * Writes `changes` to `row` without moving its status, and emits `topic` with the resulting
 * subscription — all in `trx`. For changes the transition table has no say in (a period
 * paid for while the status stays). Returns the subscription after.
 */
export async function updateSubscription(
  trx: Transaction<Database>,
  clock: Clock,
  row: SubscriptionRow,
  changes: SubscriptionChanges,
  topic: Topic,
): Promise<Subscription> {
  const updated: SubscriptionRow = { ...row, ...changes, updated_at: clock.now().toISOString() };
  await trx
    .updateTable('subscriptions')
    .set({ ...changes, updated_at: updated.updated_at })
    .where('id', '=', row.id)
    .execute();
  const subscription = toSubscription(updated);
  await emitEvent(trx, clock, topic, subscription);
  return subscription;
}

/**
 * True when the customer has a subscription that is neither cancelled nor expired (SPEC §3:
 * such a customer cannot be deleted). Here, beside the status rules, so the customers
 * module can ask without importing the subscriptions service (which locks customers).
 */
export async function customerHasLiveSubscription(db: Kysely<Database>, customerId: string): Promise<boolean> {
  const row = await db
    .selectFrom('subscriptions')
    .select('id')
    .where('customer_id', '=', customerId)
    .where('status', 'not in', ['cancelled', 'incomplete_expired'])
    .executeTakeFirst();
  return row !== undefined;
}
