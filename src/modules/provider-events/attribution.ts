// Who a reported payment belongs to (SPEC §5 "Attribution"): the customer and subscription
// named in its metadata; else the customer with the event's email (created when none
// exists); a subscription without metadata by the provider's subscription reference seen
// before, else none. Misattribution is worse than none: conflicting facts attribute less.
import type { Transaction } from 'kysely';
import { sql } from 'kysely';
import { addToCount } from '../../db/counts.ts';
import type { Database } from '../../db/database.ts';
import type { Clock } from '../../shared/clock.ts';
import { isIdOf, newId } from '../../shared/ids.ts';
import { toCustomer } from '../customers/customers.service.ts';
import type { CustomerRow } from '../customers/customers.table.ts';
import { emitEvent } from '../events/events.service.ts';
import type { PaymentReport } from './provider.ts';

export interface Attribution {
  customerId: string | null;
  subscriptionId: string | null;
  /** The currency of the subscription's plan (for reports that do not name one). */
  planCurrency: string | null;
}

/** A plausible address: one @, no spaces, a dot in the domain; at most 254 characters. */
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

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
 * The live customer with `email` (case-insensitive), created with `customer.created` when
 * there is none. A concurrent creation of the same email is absorbed (ON CONFLICT on the
 * unique email index), never an error.
 */
async function customerForEmail(
  trx: Transaction<Database>,
  clock: Clock,
  email: string,
  name: string | null,
): Promise<string> {
  const byEmail = () =>
    trx
      .selectFrom('customers')
      .select('id')
      .where(sql<string>`lower(email)`, '=', email.toLowerCase())
      .where('deleted_at', 'is', null)
      .executeTakeFirst();
  const found = await byEmail();
  if (found) return found.id;
  const now = clock.now().toISOString();
  const row: CustomerRow = {
    id: newId('customer'),
    email,
    name: name === null ? null : name.slice(0, 255),
    phone: null,
    metadata: '{}',
    created_at: now,
    updated_at: now,
    deleted_at: null,
  };
  const inserted = await trx
    .insertInto('customers')
    .values(row)
    .onConflict((oc) => oc.expression(sql`lower(email)`).where('deleted_at', 'is', null).doNothing())
    .returning('id')
    .executeTakeFirst();
  if (!inserted) {
    const raced = await byEmail();
    if (!raced) throw new Error('customer email conflict without a customer');
    return raced.id;
  }
  await addToCount(trx, 'customers', 1);
  await emitEvent(trx, clock, 'customer.created', toCustomer(row));
  return row.id;
}

/**
 * Attributes `report` from `provider` (see the header). Remembers the provider's
 * subscription reference when the metadata named our subscription, so later events
 * without metadata find it. May create a customer (with its event) in `trx`.
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
  if (subscription) {
    // A subscription of another customer than the one named is not this payment's.
    if (customerId !== null && customerId !== subscription.customer_id) subscription = undefined;
    else customerId = subscription.customer_id;
  }
  if (customerId === null && report.email !== null && report.email.length <= 254 && EMAIL.test(report.email)) {
    customerId = await customerForEmail(trx, clock, report.email, report.name);
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
