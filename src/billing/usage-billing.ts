// Usage billed in arrears (SPEC §15): what an invoice bills of its subscription's metered
// charges — the usage of the period just ended, the stretches a plan change closed before it
// (each at the charges of the plan it was recorded under), and the late usage of periods
// billed before when their meter's policy is `bill_next_invoice` — read from the meters'
// aggregates, and the record of what was billed (`billed_usage`, `usage_spans`), written
// with the invoice.
import type { Kysely, Transaction } from 'kysely';
import { inList } from '../db/bulk.ts';
import type { Database } from '../db/database.ts';
import type { MeterRow } from '../db/tables/usage.table.ts';
import type { PlanRow } from '../db/tables/plans.table.ts';
import { findMeter } from '../modules/meters/meters.service.ts';
import { parseCharges, type StoredCharge } from '../modules/plans/plans.charges.ts';
import { findPlan } from '../modules/plans/plans.service.ts';
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

/**
 * How far back billed periods are read (ms): the longest period (three years) plus the late
 * window, so a period billed at one renewal is still re-read at the next one, however long.
 */
const BILLED_LOOKBACK_MS = (3 * 366 + 36) * 24 * 60 * 60 * 1000;

/**
 * A plan charges a meter that no longer exists (SPEC §15: meters are never deleted). Billing
 * refuses rather than billing nothing: the renewal fails, is logged and retried, and no
 * revenue is lost silently.
 */
export class MeterMissingError extends Error {
  readonly meterId: string;
  constructor(meterId: string, planId: string) {
    super(`plan ${planId} charges meter ${meterId}, which does not exist: its usage cannot be billed`);
    this.name = 'MeterMissingError';
    this.meterId = meterId;
  }
}

/** The subscription whose usage is billed: its id and customer. */
export interface UsageSubscription {
  id: string;
  customer_id: string;
}

/** What an invoice bills of usage: the items (pipeline input) and the plan-change spans they close (span starts, ISO 8601). */
export interface UsageBill {
  items: ComposeUsage[];
  spans: string[];
}

/** A stretch of time whose usage is billed fresh, priced by one plan (ISO 8601 bounds, `[start, end)`). */
export interface FreshSpan {
  planId: string;
  start: string;
  end: string;
}

/**
 * The usage the invoice of `subscription` whose period starts at `periodStart` (ISO 8601)
 * bills (SPEC §15), in this order:
 * - late usage: for each period billed before whose late events could still arrive after it
 *   was last billed (it ended within LATE_USAGE_WINDOW_MS of that), whose meter's policy is
 *   `bill_next_invoice`, its aggregate now when it
 *   differs from the quantity billed, priced by the plan that priced it (`billed_usage.plan_id`)
 *   whatever the subscription's plan is now; a `drop` meter's late events are never billed;
 * - the stretches a plan change closed (`usage_spans`, ending by `periodStart`, not billed
 *   yet), each by the charges of the plan it was spent on;
 * - the period just ended — the subscription's invoiced period ending at `periodStart` — from
 *   its start, or from the end of the last plan-change stretch inside it, by `endedPlan`'s
 *   charges (the plan in force at its end, before a change scheduled for it applies).
 * A (meter, period) recorded already is never billed fresh again. Items name their plan and
 * the meter's display_name. `closing`: stretches a change would close now (openUsageSpan), as
 * if stored — a preview's (SPEC §15 "Preview"); nothing is written for them. Reads only;
 * recordBilledUsage writes. Throws MeterMissingError when a charge's meter is gone.
 */
export async function invoiceUsage(
  db: Db,
  subscription: UsageSubscription,
  endedPlan: Pick<PlanRow, 'id' | 'charges'>,
  periodStart: string,
  closing: readonly FreshSpan[] = [],
): Promise<UsageBill> {
  const plans = new Map<string, StoredCharge[]>([[endedPlan.id, parseCharges(endedPlan.charges)]]);
  const chargesOf = async (planId: string): Promise<StoredCharge[]> => {
    let charges = plans.get(planId);
    if (charges === undefined) {
      charges = parseCharges((await findPlan(db, planId))?.charges);
      plans.set(planId, charges);
    }
    return charges;
  };
  const meters = new Map<string, MeterRow>();
  const meterOf = async (meterId: string, planId: string): Promise<MeterRow> => {
    let meter = meters.get(meterId);
    if (meter === undefined) {
      meter = await findMeter(db, meterId);
      if (meter === undefined) throw new MeterMissingError(meterId, planId);
      meters.set(meterId, meter);
    }
    return meter;
  };

  const previous = await db
    .selectFrom('invoices')
    .select('period_start')
    .where('subscription_id', '=', subscription.id)
    .where('period_end', '=', periodStart)
    // A plan change's invoice of prorations ends there too, but bills no period of usage.
    .where('kind', '=', 'period')
    .orderBy('period_start', 'desc')
    .executeTakeFirst();
  const spans = await db
    .selectFrom('usage_spans')
    .selectAll()
    .where('subscription_id', '=', subscription.id)
    .where('span_end', '<=', periodStart)
    .where('invoice_id', 'is', null)
    .orderBy('span_start')
    .execute();
  const fresh: FreshSpan[] = spans.map((span) => ({
    planId: span.plan_id,
    start: iso(span.span_start),
    end: iso(span.span_end),
  }));
  const closed = closing.filter((span) => Date.parse(span.end) <= Date.parse(periodStart));
  fresh.push(...closed);
  if (previous !== undefined) {
    // The ended period's own plan bills it from the last plan change inside it, if any.
    const changed = await db
      .selectFrom('usage_spans')
      .select((eb) => eb.fn.max('span_end').as('end'))
      .where('subscription_id', '=', subscription.id)
      .where('span_end', '>', previous.period_start)
      .where('span_end', '<=', periodStart)
      .executeTakeFirst();
    const ends = [
      ...(isTime(changed?.end) ? [Date.parse(iso(changed.end))] : []),
      ...closed.map((span) => Date.parse(span.end)).filter((end) => end > Date.parse(iso(previous.period_start))),
    ];
    const start = ends.length > 0 ? new Date(Math.max(...ends)).toISOString() : iso(previous.period_start);
    if (Date.parse(start) < Date.parse(periodStart)) fresh.push({ planId: endedPlan.id, start, end: periodStart });
  }

  const since = new Date(new Date(periodStart).getTime() - BILLED_LOOKBACK_MS).toISOString();
  const billedRows = await db
    .selectFrom('billed_usage')
    .selectAll()
    .where('subscription_id', '=', subscription.id)
    .where('period_end', '>', since)
    .where('period_start', '<', periodStart)
    .orderBy('period_start')
    .execute();
  const items: ComposeUsage[] = [];
  for (const row of billedRows) {
    // Late events of a period arrive until LATE_USAGE_WINDOW_MS after its end: a row billed
    // (or adjusted) after that is settled; one billed before may have some still to bill.
    if (Date.parse(iso(row.period_end)) + LATE_USAGE_WINDOW_MS <= Date.parse(iso(row.updated_at))) continue;
    const planId = row.plan_id ?? endedPlan.id;
    const price = (await chargesOf(planId)).find((charge) => charge.meter_id === row.meter_id);
    // A row priced by a charge no plan records (billed before plans were recorded, on a plan since changed): nothing to price it by.
    if (price === undefined) continue;
    const meter = await meterOf(row.meter_id, planId);
    if (meter.late_events !== 'bill_next_invoice') continue;
    const quantity = await billableUsage(db, {
      customer_id: subscription.customer_id,
      meter_id: meter.id,
      from: iso(row.period_start),
      to: iso(row.period_end),
    });
    if (parseQuantity(quantity) === parseQuantity(row.quantity)) continue;
    items.push({
      charge: { meter_id: meter.id, name: meter.display_name, price },
      plan_id: planId,
      period_start: iso(row.period_start),
      period_end: iso(row.period_end),
      quantity,
      billed: { quantity: row.quantity, amount: Number(row.amount) },
    });
  }
  for (const span of fresh) {
    for (const price of await chargesOf(span.planId)) {
      const meter = await meterOf(price.meter_id, span.planId);
      const recorded = billedRows.some((row) => row.meter_id === meter.id && sameInstant(row.period_start, span.start));
      if (recorded) continue;
      const quantity = await billableUsage(db, {
        customer_id: subscription.customer_id,
        meter_id: meter.id,
        from: span.start,
        to: span.end,
      });
      items.push({
        charge: { meter_id: meter.id, name: meter.display_name, price },
        plan_id: span.planId,
        period_start: span.start,
        period_end: span.end,
        quantity,
        billed: null,
      });
    }
  }
  return { items, spans: spans.map((span) => iso(span.span_start)) };
}

/**
 * Which of subscriptions `subscriptionIds` have usage records an invoice starting at or before
 * `periodStart` (ISO 8601) may bill although their plan charges nothing now: a plan-change
 * stretch not billed yet, or a period billed within the lookback (its late usage). One read;
 * a subscription not in it, on a plan with no charges, has no usage to bill (invoiceUsage
 * would find nothing), so a batch skips invoiceUsage's reads for it.
 */
export async function subscriptionsWithUsageRecords(
  db: Db,
  subscriptionIds: readonly string[],
  periodStart: string,
): Promise<Set<string>> {
  if (subscriptionIds.length === 0) return new Set();
  const since = new Date(new Date(periodStart).getTime() - BILLED_LOOKBACK_MS).toISOString();
  const rows = await db
    .selectFrom('usage_spans')
    .select('subscription_id')
    .where(inList(db, 'subscription_id', subscriptionIds))
    .where('invoice_id', 'is', null)
    .union(
      db
        .selectFrom('billed_usage')
        .select('subscription_id')
        .where(inList(db, 'subscription_id', subscriptionIds))
        .where('period_end', '>', since),
    )
    .execute();
  return new Set(rows.map((row) => row.subscription_id));
}

/**
 * Records what `invoiceId` billed of `bill` (invoiceUsage's), in the caller's transaction —
 * the invoice's: a period billed the first time gets its `billed_usage` row (quantity, amount
 * in minor units — also when 0: late events then bill against it — and the plan that priced
 * it); a late adjustment moves the row to the quantity and amount billed now; the plan-change
 * spans it closed name the invoice. Throws the database's unique violation when the period
 * was recorded already (the caller holds the subscription's lock).
 */
export async function recordBilledUsage(
  trx: Transaction<Database>,
  clock: Clock,
  subscriptionId: string,
  invoiceId: string,
  bill: UsageBill,
): Promise<void> {
  const now = clock.now().toISOString();
  for (const item of bill.items) {
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
          plan_id: item.plan_id ?? null,
          invoice_id: invoiceId,
          created_at: now,
          updated_at: now,
        })
        .execute();
    } else {
      // What was billed before is kept: a draft voided by a cancel or pause gives it back (releaseBilledUsage).
      await trx
        .updateTable('billed_usage')
        .set((eb) => ({
          previous_quantity: eb.ref('quantity'),
          previous_amount: eb.ref('amount'),
          previous_invoice_id: eb.ref('invoice_id'),
          previous_updated_at: eb.ref('updated_at'),
          quantity: item.quantity,
          amount,
          invoice_id: invoiceId,
          updated_at: now,
        }))
        .where('subscription_id', '=', subscriptionId)
        .where('meter_id', '=', item.charge.meter_id)
        .where('period_start', '=', item.period_start)
        .execute();
    }
  }
  if (bill.spans.length > 0) {
    await trx
      .updateTable('usage_spans')
      .set({ invoice_id: invoiceId })
      .where('subscription_id', '=', subscriptionId)
      .where('span_start', 'in', bill.spans)
      .where('invoice_id', 'is', null)
      .execute();
  }
}

/**
 * Closes the stretch of `subscription`'s current period spent on `planId` at `at` (ISO
 * 8601), a plan change's instant (SPEC §15 "Plan changes"): from the period's start, or the
 * end of the last stretch closed inside it, to `at`. Its usage is billed by the next invoice
 * with usage (invoiceUsage) at that plan's charges. Nothing when the stretch is empty (two
 * changes in one second). The caller holds the subscription's lock, in the change's transaction.
 */
export async function closeUsageSpan(
  trx: Transaction<Database>,
  clock: Clock,
  subscription: { id: string; current_period_start: string | null },
  planId: string,
  at: string,
): Promise<void> {
  const span = await openUsageSpan(trx, subscription, planId, at);
  if (span === null) return;
  await trx
    .insertInto('usage_spans')
    .values({
      subscription_id: subscription.id,
      plan_id: span.planId,
      span_start: span.start,
      span_end: span.end,
      invoice_id: null,
      created_at: clock.now().toISOString(),
    })
    .execute();
}

/**
 * The stretch of `subscription`'s current period a change at `at` (ISO 8601) would close on
 * `planId` (closeUsageSpan writes it; a preview passes it to invoiceUsage): from the period's
 * start, or the end of the last stretch closed inside it, to `at`. Null when empty or the
 * subscription has no period.
 */
export async function openUsageSpan(
  db: Db,
  subscription: { id: string; current_period_start: string | null },
  planId: string,
  at: string,
): Promise<FreshSpan | null> {
  if (subscription.current_period_start === null) return null;
  const last = await db
    .selectFrom('usage_spans')
    .select((eb) => eb.fn.max('span_end').as('end'))
    .where('subscription_id', '=', subscription.id)
    .where('span_end', '>', subscription.current_period_start)
    .executeTakeFirst();
  const start = isTime(last?.end) ? iso(last.end) : iso(subscription.current_period_start);
  if (Date.parse(start) >= Date.parse(at)) return null;
  return { planId, start, end: iso(at) };
}

/**
 * Gives back what the drafts `invoiceIds` of subscription `subscription` billed of its usage,
 * as they are voided by a cancel or a pause (SPEC §15 "Cancelling"): they bill a period that
 * is not served, but the usage they bill was used. A period billed the first time by one of
 * them is forgotten and becomes a stretch to bill (`usage_spans`, at the plan that priced it);
 * a late adjustment goes back to what was billed before it; a plan change's stretch it billed
 * waits for the next invoice with usage again. The next invoice that bills usage — the final
 * one of a cancel (issueFinalUsageInvoice), or the renewal after a resume — bills them. The
 * caller holds the subscription's lock, in the void's transaction.
 */
export async function releaseBilledUsage(
  trx: Transaction<Database>,
  clock: Clock,
  subscription: { id: string; plan_id: string },
  invoiceIds: readonly string[],
): Promise<void> {
  if (invoiceIds.length === 0) return;
  await trx
    .updateTable('usage_spans')
    .set({ invoice_id: null })
    .where('subscription_id', '=', subscription.id)
    .where('invoice_id', 'in', invoiceIds)
    .execute();
  const rows = await trx
    .selectFrom('billed_usage')
    .selectAll()
    .where('subscription_id', '=', subscription.id)
    .where('invoice_id', 'in', invoiceIds)
    .execute();
  const spans = new Map<number, { plan_id: string; start: string; end: string }>();
  for (const row of rows) {
    if (row.previous_invoice_id !== null && row.previous_quantity !== null && row.previous_amount !== null) {
      await trx
        .updateTable('billed_usage')
        .set({
          quantity: row.previous_quantity,
          amount: row.previous_amount,
          invoice_id: row.previous_invoice_id,
          updated_at: row.previous_updated_at ?? row.updated_at,
          previous_quantity: null,
          previous_amount: null,
          previous_invoice_id: null,
          previous_updated_at: null,
        })
        .where('subscription_id', '=', subscription.id)
        .where('meter_id', '=', row.meter_id)
        .where('period_start', '=', row.period_start)
        .execute();
      continue;
    }
    await trx
      .deleteFrom('billed_usage')
      .where('subscription_id', '=', subscription.id)
      .where('meter_id', '=', row.meter_id)
      .where('period_start', '=', row.period_start)
      .execute();
    const start = iso(row.period_start);
    spans.set(Date.parse(start), { plan_id: row.plan_id ?? subscription.plan_id, start, end: iso(row.period_end) });
  }
  const now = clock.now().toISOString();
  for (const span of spans.values()) {
    // A plan change's stretch starts there already (released above): it bills the same time.
    const exists = await trx
      .selectFrom('usage_spans')
      .select('span_start')
      .where('subscription_id', '=', subscription.id)
      .where('span_start', '=', span.start)
      .executeTakeFirst();
    if (exists !== undefined) continue;
    await trx
      .insertInto('usage_spans')
      .values({
        subscription_id: subscription.id,
        plan_id: span.plan_id,
        span_start: span.start,
        span_end: span.end,
        invoice_id: null,
        created_at: now,
      })
      .execute();
  }
}

/**
 * Deletes what was billed of subscriptions `subscriptionIds`' usage (`billed_usage`,
 * `usage_spans`): a test clock's delete (SPEC §11 "Deleting"), before their invoices and the
 * subscriptions go. The caller holds their locks.
 */
export async function deleteUsageBillingOfSubscriptions(
  trx: Transaction<Database>,
  subscriptionIds: readonly string[],
): Promise<void> {
  if (subscriptionIds.length === 0) return;
  await trx.deleteFrom('usage_spans').where('subscription_id', 'in', subscriptionIds).execute();
  await trx.deleteFrom('billed_usage').where('subscription_id', 'in', subscriptionIds).execute();
}

/**
 * A meter's aggregate over a range as a quantity to bill: a sum or a last value that is
 * negative (events may carry negative values, e.g. corrections) bills nothing — "0" — rather
 * than a credit: usage never pays the customer back.
 */
async function billableUsage(db: Db, query: Parameters<typeof aggregateUsage>[1]): Promise<string> {
  const value = await aggregateUsage(db, query);
  return value.startsWith('-') ? '0' : value;
}

/** A stored timestamp (ISO text on SQLite; normalized text or a Date from PostgreSQL) as ISO 8601. */
function iso(value: string | Date): string {
  return new Date(value).toISOString();
}

/** A max() over no rows is null (undefined without a row). */
function isTime(value: string | Date | null | undefined): value is string | Date {
  return value !== null && value !== undefined;
}

function sameInstant(a: string | Date, b: string | Date): boolean {
  return new Date(a).getTime() === new Date(b).getTime();
}
