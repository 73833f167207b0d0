// A customer's usage so far (SPEC §15 `GET /api/customers/{id}/usage`): each meter's value
// over the current billing period — of the customer's live subscription, else the calendar
// month of the customer's clock — or over the range the client asks for. Here, in the core,
// because the period is a subscription's and the value the usage store's.
import type { Kysely } from 'kysely';
import type { Database } from '../db/database.ts';
import type { MeterRow } from '../db/tables/usage.table.ts';
import { NotFoundError, ValidationError } from '../http/errors.ts';
import type { Clock } from '../shared/clock.ts';
import { isIdOf } from '../shared/ids.ts';
import { isStorableTime, parseTimestamp } from '../shared/timestamps.ts';
import { findMeter } from '../modules/meters/meters.service.ts';
import { clockFor } from '../modules/test-clocks/test-clocks.time.ts';
import type { CustomerUsage } from '../modules/usage/usage.schemas.ts';
import { sqlUsageStore } from '../modules/usage/usage.store.ts';
import { parseCharges, type StoredCharge } from '../modules/plans/plans.charges.ts';
import { piecesTotal, priceUsage } from './compose/pricing.ts';

/** Statuses whose current period is one usage accrues in. */
const BILLING_STATUSES = ['trialing', 'active', 'past_due', 'unpaid', 'paused'] as const;

/** The usage query: every bound optional (ISO 8601). */
export interface CustomerUsageQuery {
  meter_id?: string;
  from?: string;
  to?: string;
}

function instant(text: string | undefined, field: string): string | undefined {
  if (text === undefined) return undefined;
  const ms = parseTimestamp(text);
  if (!isStorableTime(ms)) throw new ValidationError(`${field} must be an ISO 8601 date-time`, field);
  return new Date(ms).toISOString();
}

/**
 * The value of each meter (or only `query.meter_id`) for live customer `customerId` over
 * [from, to): both given, or the current period — the live subscription's
 * (current_period_start … current_period_end; the most recently created when several), else
 * the calendar month (UTC) of the customer's clock — with a given bound replacing its side.
 * Values are exact decimal text ("0" without events), by aggregateUsage's rules; `amount` is
 * what the value costs by the live subscription plan's charge for the meter (minor units,
 * compose/pricing.ts as the renewal prices it), null without such a charge. Throws 404
 * for an unknown customer or meter, 400 for a bound that is not an ISO 8601 date-time or a
 * `from` not before `to`.
 */
export async function customerUsage(
  db: Kysely<Database>,
  apiClock: Clock,
  customerId: string,
  query: CustomerUsageQuery,
): Promise<{ data: CustomerUsage[] }> {
  const from = instant(query.from, 'from');
  const to = instant(query.to, 'to');
  const customer = isIdOf('customer', customerId)
    ? await db
        .selectFrom('customers')
        .select(['id', 'test_clock_id'])
        .where('id', '=', customerId)
        .where('deleted_at', 'is', null)
        .executeTakeFirst()
    : undefined;
  if (!customer) throw new NotFoundError('customer', customerId);
  let meters: MeterRow[];
  if (query.meter_id !== undefined) {
    const meter = await findMeter(db, query.meter_id);
    if (!meter) throw new NotFoundError('meter', query.meter_id);
    meters = [meter];
  } else {
    meters = await db.selectFrom('meters').selectAll().orderBy('created_at').orderBy('id').execute();
  }
  let period: [string, string] | undefined;
  const subscription = await db
    .selectFrom('subscriptions')
    .innerJoin('plans', 'plans.id', 'subscriptions.plan_id')
    .select(['current_period_start', 'current_period_end', 'plans.charges'])
    .where('customer_id', '=', customer.id)
    .where('status', 'in', BILLING_STATUSES)
    .where('current_period_start', 'is not', null)
    .where('current_period_end', 'is not', null)
    .orderBy('subscriptions.created_at', 'desc')
    .orderBy('subscriptions.id', 'desc')
    .executeTakeFirst();
  // The live subscription's plan prices each meter it charges (its renewal's usage lines).
  const charges = new Map<string, StoredCharge>(parseCharges(subscription?.charges).map((c) => [c.meter_id, c]));
  if (from === undefined || to === undefined) {
    if (subscription) {
      period = [subscription.current_period_start!, subscription.current_period_end!];
    } else {
      const now = (await clockFor(db, { clock: apiClock }, customer.test_clock_id)).now();
      const start = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1);
      const end = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1);
      period = [new Date(start).toISOString(), new Date(end).toISOString()];
    }
  }
  const periodStart = from ?? period![0];
  const periodEnd = to ?? period![1];
  if (!(periodStart < periodEnd)) throw new ValidationError('from must be before to', 'from');
  const data = await Promise.all(
    meters.map(async (meter) => {
      const value = await sqlUsageStore.aggregate(db, {
        customer_id: customer.id,
        meter,
        from: periodStart,
        to: periodEnd,
      });
      const charge = charges.get(meter.id);
      return {
        meter_id: meter.id,
        value,
        // A negative value (events may correct downwards) costs nothing, as the renewal bills it.
        amount: charge === undefined ? null : value.startsWith('-') ? 0 : piecesTotal(priceUsage(charge, value)),
        period_start: periodStart,
        period_end: periodEnd,
      };
    }),
  );
  return { data };
}
