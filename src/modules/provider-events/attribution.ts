// Who a reported payment belongs to (SPEC §5 "Attribution"): the customer and subscription
// named in its metadata; else the customer with the event's email (created when none
// exists) — unless the metadata names one of our customers or subscriptions that is gone
// (deleted, or deleted with its test clock): then nobody, and no customer is created; a
// subscription without metadata by the provider's subscription reference seen before, else
// none. Misattribution is worse than none: conflicting facts attribute less.
import type { Transaction } from 'kysely';
import type { Database } from '../../db/database.ts';
import type { Clock } from '../../shared/clock.ts';
import { isIdOf } from '../../shared/ids.ts';
import { isValidEmail } from '../customers/customer-email.ts';
import { findOrCreateCustomerByEmail } from '../customers/customers.service.ts';
import type { PaymentReport } from './provider.ts';

export interface Attribution {
  customerId: string | null;
  subscriptionId: string | null;
  /** The currency of the subscription's plan (for reports that do not name one). */
  planCurrency: string | null;
}

async function findSubscription(trx: Transaction<Database>, id: string) {
  if (!isIdOf('subscription', id)) return undefined;
  return trx
    .selectFrom('subscriptions')
    .innerJoin('plans', 'plans.id', 'subscriptions.plan_id')
    .select(['subscriptions.id', 'subscriptions.customer_id', 'plans.currency'])
    .where('subscriptions.id', '=', id)
    .executeTakeFirst();
}

async function findLiveCustomer(trx: Transaction<Database>, id: string): Promise<string | null> {
  if (!isIdOf('customer', id)) return null;
  const row = await trx
    .selectFrom('customers')
    .select('id')
    .where('id', '=', id)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  return row?.id ?? null;
}

async function subscriptionByReference(trx: Transaction<Database>, provider: string, reference: string) {
  const row = await trx
    .selectFrom('provider_subscription_references')
    .select('subscription_id')
    .where('provider', '=', provider)
    .where('reference', '=', reference)
    .executeTakeFirst();
  return row ? findSubscription(trx, row.subscription_id) : undefined;
}

/**
 * Attributes `report` from `provider` (see the header). Remembers the provider's
 * subscription reference when the metadata named our subscription, so later events
 * without metadata find it. May create a customer (with its event) in `trx` — never when
 * the metadata names a customer or subscription of ours that is gone (customerId null).
 */
export async function attributePayment(
  trx: Transaction<Database>,
  clock: Clock,
  provider: string,
  report: PaymentReport,
): Promise<Attribution> {
  const named = report.metadata.subscription_id;
  let subscription = named === undefined ? undefined : await findSubscription(trx, named);
  const fromMetadata = subscription !== undefined;
  if (!subscription && report.subscriptionReference !== null) {
    subscription = await subscriptionByReference(trx, provider, report.subscriptionReference);
  }

  const namedCustomer = report.metadata.customer_id;
  let customerId = namedCustomer === undefined ? null : await findLiveCustomer(trx, namedCustomer);
  // Our metadata naming our own customer or subscription that no longer exists: the payment
  // was theirs, so it is not given to (or made into) a customer found by its email.
  const namesGone =
    (namedCustomer !== undefined && isIdOf('customer', namedCustomer) && customerId === null) ||
    (named !== undefined && isIdOf('subscription', named) && !fromMetadata);
  if (subscription) {
    // A subscription of another customer than the one named is not this payment's.
    if (customerId !== null && customerId !== subscription.customer_id) subscription = undefined;
    else customerId = subscription.customer_id;
  }
  // An address the API would refuse attributes nothing: the same rule in both places.
  if (customerId === null && !namesGone && report.email !== null && isValidEmail(report.email)) {
    customerId = await findOrCreateCustomerByEmail(trx, clock, report.email, report.name);
  }

  if (subscription && fromMetadata && report.subscriptionReference !== null) {
    await trx
      .insertInto('provider_subscription_references')
      .values({
        provider,
        reference: report.subscriptionReference,
        subscription_id: subscription.id,
        created_at: clock.now().toISOString(),
      })
      .onConflict((oc) => oc.columns(['provider', 'reference']).doNothing())
      .execute();
  }
  return {
    customerId,
    subscriptionId: subscription?.id ?? null,
    planCurrency: subscription?.currency ?? null,
  };
}
