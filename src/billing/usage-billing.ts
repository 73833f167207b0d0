// Usage billed in arrears (SPEC §15): what a period's invoice bills of its subscription's
// metered charges — the usage of the period just ended, and the late usage of periods billed
// before when their meter's policy is `bill_next_invoice` — read from the meters' aggregates,
// and the record of what was billed (`billed_usage`), written with the invoice.
import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../db/database.ts';
import type { PlanRow } from '../db/tables/plans.table.ts';
import { findMeter } from '../modules/meters/meters.service.ts';
import { parseCharges } from '../modules/plans/plans.charges.ts';
import { aggregateUsage } from '../modules/usage/usage.aggregate.ts';
import type { Clock } from '../shared/clock.ts';
import { parseQuantity, piecesTotal, priceUsage } from './compose/pricing.ts';
import type { ComposeUsage } from './compose/types.ts';

type Db = Kysely<Database> | Transaction<Database>;

/**
 * How far back late usage is looked for (ms): SPEC §15 refuses events older than 35 days, so
 * a period that ended before this has no late events left to come; one day of margin.
 */
export const LATE_USAGE_WINDOW_MS = 36 * 24 * 60 * 60 * 1000;

/** The subscription whose usage is billed: its id and customer. */
export interface UsageSubscription {
  id: string;
  customer_id: string;
}

/**
 * The usage the invoice of `subscription`'s period starting at `periodStart` (ISO 8601) bills
 * (SPEC §15), priced by `plan`'s charges, in charge order:
 * - the period just ended — the subscription's invoiced period ending at `periodStart` — per
 *   charge, its meter's aggregate over `[its start, periodStart)`, unless billed already;
 * - for each period billed before that ended within LATE_USAGE_WINDOW_MS of `periodStart`
 *   and whose meter is still charged with policy `bill_next_invoice`: its aggregate now, when
 *   it differs from the quantity billed (late events), with what was billed (the adjustment
 *   bills the difference). A `drop` meter's late events are never billed.
 * None when the plan has no charges or the subscription had no period before. Lines are
 * named by the meter's display_name. Reads only; recordBilledUsage writes.
 */
export async function invoiceUsage(
  db: Db,
  subscription: UsageSubscription,
  plan: Pick<PlanRow, 'charges'>,
  periodStart: string,
): Promise<ComposeUsage[]> {
  const charges = parseCharges(plan.charges);
  if (charges.length === 0) return [];
  const previous = await db
    .selectFrom('invoices')
    .select('period_start')
    .where('subscription_id', '=', subscription.id)
    .where('period_end', '=', periodStart)
    // A plan change's invoice of prorations ends there too, but bills no period of usage.
    .where('kind', '=', 'period')
    .orderBy('period_start', 'desc')
    .executeTakeFirst();
  const since = new Date(new Date(periodStart).getTime() - LATE_USAGE_WINDOW_MS).toISOString();
  const billedRows = await db
    .selectFrom('billed_usage')
    .selectAll()
    .where('subscription_id', '=', subscription.id)
    .where('period_end', '>', since)
    .where('period_start', '<', periodStart)
    .orderBy('period_start')
    .execute();
  const items: ComposeUsage[] = [];
  for (const price of charges) {
    const meter = await findMeter(db, price.meter_id);
    // A meter is never deleted while a plan charges it; a missing one bills nothing rather than failing a renewal.
    if (meter === undefined) continue;
    const charge = { meter_id: meter.id, name: meter.display_name, price };
    const own = billedRows.filter((row) => row.meter_id === meter.id);
    if (meter.late_events === 'bill_next_invoice') {
      for (const row of own) {
        if (previous !== undefined && sameInstant(row.period_start, previous.period_start)) continue;
        const quantity = await aggregateUsage(db, {
          customer_id: subscription.customer_id,
          meter_id: meter.id,
          from: iso(row.period_start),
          to: iso(row.period_end),
        });
        if (parseQuantity(quantity) === parseQuantity(row.quantity)) continue;
        items.push({
          charge,
          period_start: iso(row.period_start),
          period_end: iso(row.period_end),
          quantity,
          billed: { quantity: row.quantity, amount: Number(row.amount) },
        });
      }
    }
    if (previous === undefined) continue;
    const from = iso(previous.period_start);
    if (own.some((row) => sameInstant(row.period_start, from))) continue;
    const quantity = await aggregateUsage(db, {
      customer_id: subscription.customer_id,
      meter_id: meter.id,
      from,
      to: periodStart,
    });
    items.push({ charge, period_start: from, period_end: periodStart, quantity, billed: null });
  }
  return items;
}

/**
 * Records what `invoiceId` billed of `items` (invoiceUsage's), in the caller's transaction —
 * the invoice's: a period billed the first time gets its `billed_usage` row (quantity and
 * amount, minor units, also when 0: late events then bill against it); a late adjustment
 * moves the row to the quantity and amount billed now. Throws the database's unique
 * violation when the period was recorded already (the caller holds the subscription's lock).
 */
export async function recordBilledUsage(
  trx: Transaction<Database>,
  clock: Clock,
  subscriptionId: string,
  invoiceId: string,
  items: readonly ComposeUsage[],
): Promise<void> {
  const now = clock.now().toISOString();
  for (const item of items) {
    const amount = piecesTotal(priceUsage(item.charge.price, item.quantity));
    if (item.billed === null) {
      await trx
        .insertInto('billed_usage')
        .values({
          subscription_id: subscriptionId,
          meter_id: item.charge.meter_id,
          period_start: item.period_start,
          period_end: item.period_end,
          quantity: item.quantity,
          amount,
          invoice_id: invoiceId,
          created_at: now,
          updated_at: now,
        })
        .execute();
    } else {
      await trx
        .updateTable('billed_usage')
        .set({ quantity: item.quantity, amount, invoice_id: invoiceId, updated_at: now })
        .where('subscription_id', '=', subscriptionId)
        .where('meter_id', '=', item.charge.meter_id)
        .where('period_start', '=', item.period_start)
        .execute();
    }
  }
}

/** A stored timestamp (ISO text on SQLite; normalized text or a Date from PostgreSQL) as ISO 8601. */
function iso(value: string | Date): string {
  return new Date(value).toISOString();
}

function sameInstant(a: string | Date, b: string | Date): boolean {
  return new Date(a).getTime() === new Date(b).getTime();
}
