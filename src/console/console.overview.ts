// The console's overview (SPEC §16): counts, MRR, failed payments and open dunning per
// currency, failing webhook endpoints, provider events failed or held. Reads only; each a
// count or a grouped sum over an indexed status, or a total the lists keep (db/counts.ts), so
// the page costs the same with 1 M customers.
import type { Kysely } from 'kysely';
import { readCount } from '../db/counts.ts';
import type { Database } from '../db/database.ts';
import type { Clock } from '../shared/clock.ts';

/** Days per year over months per year: a daily or weekly price's monthly share (Stripe's MRR). */
const MONTHS_PER_YEAR = 12;
const DAYS_PER_YEAR = 365;
const WEEKS_PER_YEAR = 52;
/** How far back the failed payments count goes. */
export const FAILED_PAYMENTS_WINDOW_DAYS = 30;

/** What the overview shows; amounts in minor units of their currency. */
export interface Overview {
  counts: {
    customers: number;
    subscriptions: number;
    openInvoices: number;
    openDunning: number;
    failingEndpoints: number;
    failedEvents: number;
    heldEvents: number;
  };
  perCurrency: {
    currency: string;
    mrr: number;
    failedPayments: number;
    openDunning: number;
    dunningAmount: number;
  }[];
}

/**
 * The monthly share of `amount` (minor units) billed every `count` `interval`s, rounded
 * once (half away from zero): yearly ÷ 12, weekly × 52 ÷ 12, daily × 365 ÷ 12.
 */
export function monthlyShare(amount: number, interval: string, count: number): number {
  const perYear =
    interval === 'year'
      ? 1
      : interval === 'month'
        ? MONTHS_PER_YEAR
        : interval === 'week'
          ? WEEKS_PER_YEAR
          : DAYS_PER_YEAR;
  const monthly = (amount * perYear) / (count * MONTHS_PER_YEAR);
  return Math.sign(monthly) * Math.round(Math.abs(monthly));
}

async function countWhere(
  db: Kysely<Database>,
  table: 'invoices' | 'dunning_cases' | 'provider_events',
  status: string,
): Promise<number> {
  const row = await db
    .selectFrom(table)
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where('status', '=', status as never)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/**
 * The overview at `clock`'s now. MRR: live subscriptions (`active`, `past_due`; trials and
 * paused ones bring nothing yet) × quantity, each plan's price as its monthly share
 * (monthlyShare), summed per currency. Failed payments: those created in the last
 * FAILED_PAYMENTS_WINDOW_DAYS days. Open dunning: open cases and what they chase.
 */
export async function readOverview(db: Kysely<Database>, clock: Clock): Promise<Overview> {
  const since = new Date(clock.now().getTime() - FAILED_PAYMENTS_WINDOW_DAYS * 86_400_000).toISOString();
  const [customers, subscriptions, openInvoices, openDunning, failedEvents, heldEvents] = await Promise.all([
    readCount(db, 'customers'),
    readCount(db, 'subscriptions'),
    countWhere(db, 'invoices', 'open'),
    countWhere(db, 'dunning_cases', 'open'),
    countWhere(db, 'provider_events', 'failed'),
    countWhere(db, 'provider_events', 'held'),
  ]);
  const failingEndpoints = await db
    .selectFrom('webhook_endpoints')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where((eb) => eb.or([eb('status', '=', 'disabled'), eb('failing_since', 'is not', null)]))
    .executeTakeFirstOrThrow();
  const revenue = await db
    .selectFrom('subscriptions')
    .innerJoin('plans', 'plans.id', 'subscriptions.plan_id')
    .select((eb) => [
      'plans.currency',
      'plans.interval',
      'plans.interval_count',
      eb.fn.sum<number | string>(eb('plans.amount', '*', eb.ref('subscriptions.quantity'))).as('amount'),
    ])
    .where('subscriptions.status', 'in', ['active', 'past_due'])
    .groupBy(['plans.currency', 'plans.interval', 'plans.interval_count'])
    .execute();
  const failed = await db
    .selectFrom('payments')
    .select((eb) => ['currency', eb.fn.countAll<number | string>().as('n')])
    .where('status', '=', 'failed')
    .where('created_at', '>=', since)
    .groupBy('currency')
    .execute();
  const dunning = await db
    .selectFrom('dunning_cases')
    .select((eb) => [
      'currency',
      eb.fn.countAll<number | string>().as('n'),
      eb.fn.sum<number | string>('amount_due').as('amount'),
    ])
    .where('status', '=', 'open')
    .groupBy('currency')
    .execute();
  const rows = new Map<string, Overview['perCurrency'][number]>();
  const rowOf = (currency: string) => {
    const key = currency.toUpperCase();
    let row = rows.get(key);
    if (!row) rows.set(key, (row = { currency: key, mrr: 0, failedPayments: 0, openDunning: 0, dunningAmount: 0 }));
    return row;
  };
  for (const group of revenue) {
    rowOf(group.currency).mrr += monthlyShare(Number(group.amount), group.interval, group.interval_count);
  }
  for (const group of failed) rowOf(group.currency).failedPayments += Number(group.n);
  for (const group of dunning) {
    const row = rowOf(group.currency);
    row.openDunning += Number(group.n);
    row.dunningAmount += Number(group.amount);
  }
  return {
    counts: {
      customers,
      subscriptions,
      openInvoices,
      openDunning,
      failingEndpoints: Number(failingEndpoints.n),
      failedEvents,
      heldEvents,
    },
    perCurrency: [...rows.values()].sort((a, b) => a.currency.localeCompare(b.currency)),
  };
}
