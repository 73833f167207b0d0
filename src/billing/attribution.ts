// Who a reported payment belongs to (SPEC §5 "Attribution"): the customer and subscription
// named in its metadata; else the customer with the event's email (created when none
// exists) — unless the metadata names one of our customers or subscriptions that is gone
// (deleted, or deleted with its test clock): then nobody, and no customer is created; a
// subscription without metadata by the provider's subscription reference seen before, else
// the subscription of the payable invoice the metadata names, when that invoice is the
// payer's and in the payment's currency (SPEC §9), else none. Misattribution is worse than
// none: conflicting facts attribute less.
import type { Transaction } from 'kysely';
import type { Database } from '../db/database.ts';
import type { Clock } from '../shared/clock.ts';
import { isIdOf } from '../shared/ids.ts';
import { isValidEmail, normalizeEmail } from '../modules/customers/customers.email.ts';
import { findOrCreateCustomerByEmail } from '../modules/customers/customers.service.ts';
import { isPayable } from '../modules/invoices/invoices.status.ts';
import { findInvoiceRow } from '../modules/invoices/invoices.lifecycle.ts';
import { rememberProviderSubscriptionReference } from '../modules/subscriptions/subscriptions.lifecycle.ts';
import type { PaymentReport } from '../providers/provider.ts';
import type { PaymentBatch } from './payment-batch.ts';

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
 * The subscription of the invoice `report`'s metadata names (`invoice_id`) when that invoice
 * is the payment's: of customer `customerId`, payable (`open`/`uncollectible`) and in the
 * payment's currency (`currency`: the report's, else the payment's recorded one; null: not
 * known yet, any). An integration may name the invoice and the customer without the
 * subscription; the invoice it named is then settled (SPEC §9 "Which invoice"). Read without
 * a lock: settlement checks the invoice again under its subscription's lock.
 */
async function namedInvoiceSubscription(
  trx: Transaction<Database>,
  report: PaymentReport,
  customerId: string,
  currency: string | null,
) {
  const named = report.metadata.invoice_id;
  const invoice = named === undefined ? undefined : await findInvoiceRow(trx, named);
  if (!invoice || invoice.subscription_id === null || invoice.customer_id !== customerId) return undefined;
  if (!isPayable(invoice.status) || (currency !== null && invoice.currency !== currency)) return undefined;
  const subscription = await findSubscription(trx, invoice.subscription_id);
  return subscription?.customer_id === customerId ? { ...subscription, currency: invoice.currency } : undefined;
}

/**
 * Attributes `report` from `provider` (see the header); `recordedCurrency` is the currency
 * of the payment already recorded under its reference, if any (for reports naming none).
 * `batch`: the payer's customer already read for the batch (payment-batch.ts), if it was.
 * Remembers the provider's subscription reference when the metadata named our subscription,
 * so later events without metadata find it. May create a customer (with its event) in `trx` —
 * never when the metadata names a customer or subscription of ours that is gone (customerId
 * null).
 */
export async function attributePayment(
  trx: Transaction<Database>,
  clock: Clock,
  provider: string,
  report: PaymentReport,
  recordedCurrency: string | null = null,
  batch?: Pick<PaymentBatch, 'customerByEmail'>,
): Promise<Attribution> {
  const currency = report.currency ?? recordedCurrency;
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
    const known = batch?.customerByEmail(normalizeEmail(report.email));
    customerId = await findOrCreateCustomerByEmail(trx, clock, report.email, report.name, known);
  }

  if (!subscription && customerId !== null) {
    subscription = await namedInvoiceSubscription(trx, report, customerId, currency);
  }

  if (subscription && fromMetadata && report.subscriptionReference !== null) {
    await rememberProviderSubscriptionReference(trx, clock, provider, report.subscriptionReference, subscription.id);
  }
  return {
    customerId,
    subscriptionId: subscription?.id ?? null,
    planCurrency: subscription?.currency ?? null,
  };
}
