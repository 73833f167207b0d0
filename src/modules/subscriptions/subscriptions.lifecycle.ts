// Applies subscription transitions: the only writer of `subscriptions.status`. Each change
// consults the transition table, writes the row and emits its event in the caller's
// transaction (SPEC §4, §6 outbox). The only writer of the table too (and of the provider
// subscription references that name its rows): creation, payment times, a clock's delete.
import { type Kysely, sql, type Transaction } from 'kysely';
import { inList, rowsTable } from '../../db/bulk.ts';
import { addToCount } from '../../db/counts.ts';
import type { Database } from '../../db/database.ts';
import { forUpdate } from '../../db/locking.ts';
import { isPostgres } from '../../db/column-types.ts';
import { isLockNotAvailable } from '../../db/errors.ts';
import { AppError, NotFoundError } from '../../http/errors.ts';
import { pickFields } from '../../http/schemas.ts';
import type { Clock } from '../../shared/clock.ts';
import { isIdOf } from '../../shared/ids.ts';
import { emitEvent } from '../events/events.service.ts';
import type { Topic } from '../events/events.topics.ts';
import { isEntitled, type LifecycleEvent, nextStatus, type SubscriptionStatus } from './subscriptions.status.ts';
import { type Subscription, subscriptionSchema } from './subscriptions.schemas.ts';
import type { Discount } from '../coupons/coupons.schemas.ts';
import { parseTaxRateIds } from '../tax-rates/tax-rates.service.ts';
import type { SubscriptionRow, SubscriptionsTable } from '../../db/tables/subscriptions.table.ts';
import { deletePendingItems } from './subscriptions.pending-items.ts';
import { compiledQuery, type Param } from '../../db/compiled-queries.ts';

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
    tax_rate_ids: parseTaxRateIds(row.tax_rate_ids),
    pending_update:
      row.pending_plan_id === null || row.pending_effective_at === null
        ? null
        : {
            plan_id: row.pending_plan_id,
            quantity: row.pending_quantity ?? row.quantity,
            effective_at: row.pending_effective_at,
          },
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
const subscriptionForUpdate = compiledQuery((db, param: Param<{ id: string }>) =>
  forUpdate(db.selectFrom('subscriptions').selectAll().where('id', '=', param('id')), db),
);

export async function lockSubscription(trx: Transaction<Database>, id: string): Promise<SubscriptionRow> {
  const row = isIdOf('subscription', id) ? await subscriptionForUpdate.executeTakeFirst(trx, { id }) : undefined;
  if (!row) throw new NotFoundError('subscription', id);
  return row;
}

/**
 * Reads a subscription inside `trx` for a plan change (SPEC §13), locked on PostgreSQL
 * without waiting: while another transaction holds it (a concurrent change, a renewal, a
 * payment) the change is refused with 409 `conflict` rather than applied on top of a state
 * the client did not see — of two concurrent changes one wins, the other is told to retry.
 * SQLite runs one writer at a time, so there changes simply queue. Throws 404 for unknown ids.
 */
export async function lockSubscriptionForChange(trx: Transaction<Database>, id: string): Promise<SubscriptionRow> {
  if (!isPostgres(trx)) return lockSubscription(trx, id);
  if (!isIdOf('subscription', id)) throw new NotFoundError('subscription', id);
  let row: SubscriptionRow | undefined;
  try {
    row = await trx
      .selectFrom('subscriptions')
      .selectAll()
      .where('id', '=', id)
      .forUpdate()
      .noWait()
      .executeTakeFirst();
  } catch (error) {
    if (isLockNotAvailable(error)) {
      throw new AppError('conflict', `subscription ${id} is being changed by another request: retry`);
    }
    throw error;
  }
  if (!row) throw new NotFoundError('subscription', id);
  return row;
}

/**
 * Inserts the new subscription `row` (its status `trialing` or `incomplete`, decided by the
 * caller: billing/subscriptions.ts createSubscription, SPEC §4), counts it (db/counts.ts) and
 * emits `subscription.created` with it — all in `trx`. Returns the subscription as the API
 * shows it. Throws what the insert throws (a duplicate id, a missing customer or plan).
 */
export async function insertSubscription(
  trx: Transaction<Database>,
  clock: Clock,
  row: SubscriptionRow,
): Promise<Subscription> {
  await trx.insertInto('subscriptions').values(row).execute();
  await addToCount(trx, 'subscriptions', 1);
  const subscription = toSubscription(row);
  await emitEvent(trx, clock, 'subscription.created', subscription);
  return subscription;
}

/** The two payment times a subscription remembers (SPEC §5 stale reports). */
export type PaymentTime = 'last_payment_succeeded_at' | 'last_payment_failed_at';

/**
 * Remembers `at` (ISO 8601, the provider's time of the payment) as `row`'s latest successful
 * or failed payment applied, unless `at` is undefined or a time no earlier is remembered
 * already: the times order reports that arrive out of order (SPEC §5 "stale reports").
 * Internal bookkeeping: no event, `updated_at` stays. The caller holds the subscription's
 * lock (lockSubscription).
 */
export async function rememberPaymentTime(
  trx: Transaction<Database>,
  row: SubscriptionRow,
  column: PaymentTime,
  at: string | undefined,
): Promise<void> {
  const remembered = row[column];
  if (at === undefined || (remembered !== null && Date.parse(at) <= Date.parse(remembered))) return;
  await trx.updateTable('subscriptions').set(column, at).where('id', '=', row.id).execute();
}

/**
 * Remembers that `provider` calls subscription `subscriptionId` (`sub_…`) by `reference`
 * (its own subscription id), so later payment reports without our metadata are attributed
 * to it (SPEC §5 "Attribution"). The first subscription remembered for a reference stays:
 * a repeat is ignored (ON CONFLICT DO NOTHING). `clock` stamps `created_at`.
 */
export async function rememberProviderSubscriptionReference(
  trx: Transaction<Database>,
  clock: Clock,
  provider: string,
  reference: string,
  subscriptionId: string,
): Promise<void> {
  await trx
    .insertInto('provider_subscription_references')
    .values({ provider, reference, subscription_id: subscriptionId, created_at: clock.now().toISOString() })
    .onConflict((oc) => oc.columns(['provider', 'reference']).doNothing())
    .execute();
}

/**
 * Forgets the provider subscription references of subscriptions `subscriptionIds` (`sub_…`,
 * locked by the caller): a test clock's delete (SPEC §11 "Deleting"), before the
 * subscriptions go. No events.
 */
export async function deleteProviderSubscriptionReferences(
  trx: Transaction<Database>,
  subscriptionIds: readonly string[],
): Promise<void> {
  if (subscriptionIds.length === 0) return;
  await trx.deleteFrom('provider_subscription_references').where('subscription_id', 'in', subscriptionIds).execute();
}

/**
 * Deletes subscriptions `subscriptionIds` (`sub_…`, locked by the caller) and uncounts them
 * (db/counts.ts): a test clock's delete (SPEC §11 "Deleting"), after their invoices, dunning
 * cases and provider references are gone. No events.
 */
export async function deleteSubscriptions(
  trx: Transaction<Database>,
  subscriptionIds: readonly string[],
): Promise<void> {
  if (subscriptionIds.length === 0) return;
  await deletePendingItems(trx, subscriptionIds);
  await trx.deleteFrom('subscriptions').where('id', 'in', subscriptionIds).execute();
  await addToCount(trx, 'subscriptions', -subscriptionIds.length);
}

export type SubscriptionChanges = Partial<
  Omit<SubscriptionsTable, 'id' | 'customer_id' | 'status' | 'created_at' | 'updated_at' | 'metadata'>
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
 * For several locked subscriptions, what a successful payment at `paidAt` (ISO 8601) does
 * when it moves them: rememberPaymentTime('last_payment_succeeded_at', paidAt), then
 * transitionSubscription(row, 'payment_succeeded') — the same rows and events (the event
 * shows the row as transitionSubscription shows it), one statement per distinct change (one
 * for a batch in one clock). Throws ForbiddenTransitionError (nothing written) when one of
 * them cannot take the payment. Returns the subscriptions after, in entry order.
 */
export async function transitionSubscriptionsOnPayment(
  trx: Transaction<Database>,
  entries: readonly { clock: Clock; row: SubscriptionRow; paidAt: string }[],
): Promise<Subscription[]> {
  const transitions = entries.map(({ row }) => {
    const transition = nextStatus(row.status, 'payment_succeeded');
    if (!transition) throw new ForbiddenTransitionError(row.status, 'payment_succeeded');
    return transition;
  });
  const subscriptions: Subscription[] = [];
  const groups = new Map<string, { set: Partial<SubscriptionsTable>; ids: string[] }>();
  for (const [index, { clock, row, paidAt }] of entries.entries()) {
    const transition = transitions[index]!;
    const remembered = row.last_payment_succeeded_at;
    const remember = remembered === null || Date.parse(paidAt) > Date.parse(remembered);
    const updated: SubscriptionRow = { ...row, status: transition.to, updated_at: clock.now().toISOString() };
    const set = {
      status: updated.status,
      updated_at: updated.updated_at,
      ...(remember ? { last_payment_succeeded_at: paidAt } : {}),
    };
    const key = JSON.stringify(set);
    const group = groups.get(key);
    if (group) group.ids.push(row.id);
    else groups.set(key, { set, ids: [row.id] });
    const subscription = toSubscription(updated);
    await emitEvent(trx, clock, transition.topic, subscription);
    subscriptions.push(subscription);
  }
  for (const { set, ids } of groups.values()) {
    await trx
      .updateTable('subscriptions')
      .set(set)
      .where(inList(trx, 'id', ids))
      .execute();
  }
  return subscriptions;
}

/** The fields a plan change (SPEC §13) reports as they were before: Stripe's `previous_attributes`. */
export type PreviousAttributes = Partial<
  Pick<
    Subscription,
    | 'plan_id'
    | 'quantity'
    | 'pending_update'
    | 'billing_cycle_anchor'
    | 'current_period_start'
    | 'current_period_end'
    | 'tax_rate_ids'
  >
> & {
  /** The subscription's own discount before a PATCH changed it (SPEC §14), null for none. */
  discount?: Discount | null;
};

/**
 * Writes `changes` to `row` without moving its status, and emits `topic` with the resulting
 * subscription — all in `trx`. For changes the transition table has no say in (a period
 * paid for while the status stays, a plan change). Given `previousAttributes`, the event's
 * data is the subscription with `previous_attributes` (SPEC §13). Returns the subscription after.
 */
export async function updateSubscription(
  trx: Transaction<Database>,
  clock: Clock,
  row: SubscriptionRow,
  changes: SubscriptionChanges,
  topic: Topic,
  previousAttributes?: PreviousAttributes,
): Promise<Subscription> {
  const updated: SubscriptionRow = { ...row, ...changes, updated_at: clock.now().toISOString() };
  await trx
    .updateTable('subscriptions')
    .set({ ...changes, updated_at: updated.updated_at })
    .where('id', '=', row.id)
    .execute();
  const subscription = toSubscription(updated);
  const data =
    previousAttributes === undefined ? subscription : { ...subscription, previous_attributes: previousAttributes };
  await emitEvent(trx, clock, topic, data);
  return subscription;
}

/** A subscription's period moved without its status (see updateSubscriptionPeriods). */
export interface PeriodMove {
  row: SubscriptionRow;
  /** ISO 8601. */
  current_period_start: string;
  current_period_end: string;
}

/**
 * updateSubscription for many rows at once, for the one change a renewal makes: each row's
 * `current_period_start`/`current_period_end` set to its move's (and `updated_at` to now) in
 * ONE statement (UPDATE … FROM a VALUES list, bound values), and `subscription.updated`
 * emitted for each, in order — all in `trx`. The caller holds the rows' locks (a claimed
 * batch). Returns the subscriptions after, in order.
 */
export async function updateSubscriptionPeriods(
  trx: Transaction<Database>,
  clock: Clock,
  moves: readonly PeriodMove[],
): Promise<Subscription[]> {
  if (moves.length === 0) return [];
  const now = clock.now().toISOString();
  // The moves' columns are text: the periods are cast to the column's type on PostgreSQL.
  const time = isPostgres(trx) ? sql`::timestamptz` : sql``;
  const moved = rowsTable(
    trx,
    'v',
    ['id', 'period_start', 'period_end'],
    moves.map((move) => [move.row.id, move.current_period_start, move.current_period_end]),
  );
  await sql`update subscriptions set current_period_start = v.period_start${time}, current_period_end = v.period_end${time}, updated_at = ${now}
    from ${moved} where subscriptions.id = v.id`.execute(trx);
  const updated: Subscription[] = [];
  for (const move of moves) {
    const subscription = toSubscription({
      ...move.row,
      current_period_start: move.current_period_start,
      current_period_end: move.current_period_end,
      updated_at: now,
    });
    await emitEvent(trx, clock, 'subscription.updated', subscription);
    updated.push(subscription);
  }
  return updated;
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
