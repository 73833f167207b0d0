// Reading subscriptions (SPEC §3): one by id, and pages of them. What a request changes lives
// in the billing core (billing/subscriptions.ts); status changes in subscriptions.lifecycle.ts.
import type { Kysely } from 'kysely';
import type { Database } from '../../db/database.ts';
import { NotFoundError } from '../../http/errors.ts';
import { defineList, type ListParams, type Page } from '../../http/lists.ts';
import { isIdOf } from '../../shared/ids.ts';
import type { SubscriptionStatus } from './subscriptions.status.ts';
import { type Subscription, toSubscription } from './subscriptions.lifecycle.ts';

/** One subscription. Throws 404 `not_found` for unknown or malformed ids. */
export async function getSubscription(db: Kysely<Database>, id: string): Promise<Subscription> {
  const row = isIdOf('subscription', id)
    ? await db.selectFrom('subscriptions').selectAll().where('id', '=', id).executeTakeFirst()
    : undefined;
  if (!row) throw new NotFoundError('subscription', id);
  return toSubscription(row);
}

/** The fields `sort_by` may name on GET /api/subscriptions. */
export const SUBSCRIPTION_SORT_FIELDS = ['created_at', 'current_period_end', 'status'] as const;

export interface SubscriptionFilters {
  customer_id?: string;
  status?: SubscriptionStatus;
}

const subscriptionsList = defineList({
  from: (db) => db.selectFrom('subscriptions'),
  select: (query) => query.selectAll(),
  sortable: SUBSCRIPTION_SORT_FIELDS,
  keptTotal: 'subscriptions',
  map: (rows) => rows.map(toSubscription),
});

/** A page of subscriptions, optionally of one customer and/or in one status (compiled, http/lists.ts). */
export async function listSubscriptions(
  db: Kysely<Database>,
  params: ListParams,
  filters: SubscriptionFilters,
): Promise<Page<Subscription>> {
  return subscriptionsList.page(db, params, { customer_id: filters.customer_id, status: filters.status });
}
