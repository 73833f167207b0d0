// Dunning cases (SPEC §4 "Dunning case"): opened by a failed payment or an unpaid renewal,
// counted on further failures, stepped by reminders (billing/dunning-steps.ts decides when),
// recovered by a payment, closed by a cancel. The only writer of dunning_cases and
// dunning_steps. Every change commits with its event in the caller's transaction (SPEC §6
// outbox).
import { sql, type Transaction } from 'kysely';
import type { Config } from '../../config.ts';
import { inList } from '../../db/bulk.ts';
import { isPostgres } from '../../db/column-types.ts';
import type { Database } from '../../db/database.ts';
import { forUpdate } from '../../db/locking.ts';
import { pickFields } from '../../http/schemas.ts';
import type { Clock } from '../../shared/clock.ts';
import { newId } from '../../shared/ids.ts';
import { emitEvent } from '../events/events.service.ts';
import { nextActionAt } from './dunning.schedule.ts';
import { caseSchema, type DunningCase, type DunningReminder } from './dunning.schemas.ts';
import type { DunningCaseRow, DunningCaseStatus, DunningReason } from '../../db/tables/dunning.table.ts';
import { compiledQuery, type Param } from '../../db/compiled-queries.ts';

/** What dunning needs from the running service: the time and the schedule (Deps fits). */
export interface DunningContext {
  clock: Clock;
  config: Pick<Config, 'dunningScheduleMs' | 'dunningFinalAction'>;
}

export type { DunningCase };

/**
 * A case row as the API and its events show it: an explicit pick of caseSchema's fields, so
 * a column added later never leaks into events (responses are cut by their schema anyway).
 */
export function toDunningCase(row: DunningCaseRow): DunningCase {
  return pickFields(caseSchema, row);
}

/** What opened (or re-failed) a case: the cause, and what is owed. */
export interface DunningOpening {
  reason: DunningReason;
  /** The failed payment (`pay_…`), or null for an unpaid renewal. */
  paymentId: string | null;
  /** Minor units. */
  amountDue: number;
  /** ISO 4217, upper case. */
  currency: string;
  /** The invoice (`inv_…`) the case chases (SPEC §9), when there is one. */
  invoiceId?: string | null;
}

/** The subscription's open case, locked on PostgreSQL, or undefined. */
export async function findOpenCase(
  trx: Transaction<Database>,
  subscriptionId: string,
): Promise<DunningCaseRow | undefined> {
  return openCaseForUpdate.executeTakeFirst(trx, { subscriptionId });
}

const openCaseForUpdate = compiledQuery((db, param: Param<{ subscriptionId: string }>) =>
  forUpdate(
    db
      .selectFrom('dunning_cases')
      .selectAll()
      .where('subscription_id', '=', param('subscriptionId'))
      .where('status', '=', 'open'),
    db,
  ),
);

/**
 * Opens a case for `subscription` and emits `dunning.started`, or — when one is already
 * open — counts one more attempt on it (no event: the failure has its own `payment.failed`).
 * Its first step is due DUNNING_SCHEDULE[0] after opening. The caller holds the
 * subscription's lock (lockSubscription), so two failures cannot both open a case; the
 * partial unique index on open cases is the backstop. Returns the case after.
 */
export async function openOrCountDunningCase(
  trx: Transaction<Database>,
  { clock, config }: DunningContext,
  subscription: { id: string; customer_id: string; test_clock_id: string | null },
  opening: DunningOpening,
): Promise<DunningCase> {
  const now = clock.now().toISOString();
  const open = await findOpenCase(trx, subscription.id);
  if (open) {
    const counted: DunningCaseRow = { ...open, attempts: open.attempts + 1, updated_at: now };
    await trx
      .updateTable('dunning_cases')
      .set({ attempts: counted.attempts, updated_at: now })
      .where('id', '=', open.id)
      .execute();
    return toDunningCase(counted);
  }
  const row: DunningCaseRow = {
    id: newId('dunningCase'),
    customer_id: subscription.customer_id,
    test_clock_id: subscription.test_clock_id,
    subscription_id: subscription.id,
    payment_id: opening.paymentId,
    invoice_id: opening.invoiceId ?? null,
    status: 'open',
    reason: opening.reason,
    attempts: 1,
    step: 0,
    next_action_at: nextActionAt(clock.now(), 0, config.dunningScheduleMs).toISOString(),
    retry_requested_at: null,
    amount_due: opening.amountDue,
    currency: opening.currency,
    opened_at: now,
    closed_at: null,
    created_at: now,
    updated_at: now,
  };
  await trx.insertInto('dunning_cases').values(row).execute();
  const created = toDunningCase(row);
  await emitEvent(trx, clock, 'dunning.started', created);
  return created;
}

/**
 * Sets `amount_due` (minor units) of the open case chasing invoice `invoiceId`, if any, to
 * what the invoice now has remaining: a credit note lowered what it owes, or its void raised
 * it again (SPEC §14), so the case never chases a stale amount. No event of its own: the
 * `credit_note.*` event of the same transaction tells the change. The caller holds the
 * invoice's lock (lock order: invoices → dunning_cases).
 */
export async function setCaseAmountDue(
  trx: Transaction<Database>,
  clock: Clock,
  invoiceId: string,
  amountDue: number,
): Promise<void> {
  await trx
    .updateTable('dunning_cases')
    .set({ amount_due: amountDue, updated_at: clock.now().toISOString() })
    .where('invoice_id', '=', invoiceId)
    .where('status', '=', 'open')
    .execute();
}

/**
 * Closes the subscription's open case, if any, as `status` (`recovered` after a successful
 * payment, emitting `dunning.recovered`; `cancelled` when the subscription is cancelled, no
 * event of its own — `subscription.cancelled` tells it). With `paidInvoiceId` (the invoice a
 * payment just paid, `inv_…`), a case chasing another invoice stays open: a case recovers
 * when its own invoice is paid (SPEC §9); a case chasing no invoice recovers on any payment.
 * Returns the closed case or undefined.
 */
export async function closeOpenCase(
  trx: Transaction<Database>,
  clock: Clock,
  subscriptionId: string,
  status: 'recovered' | 'cancelled',
  paidInvoiceId: string | null = null,
): Promise<DunningCase | undefined> {
  const open = await findOpenCase(trx, subscriptionId);
  if (!open) return undefined;
  if (paidInvoiceId !== null && open.invoice_id !== null && open.invoice_id !== paidInvoiceId) return undefined;
  const closed = await closeCase(trx, clock, open, status);
  if (status === 'recovered') await emitEvent(trx, clock, 'dunning.recovered', closed);
  return closed;
}

/**
 * Closes the open case chasing invoice `invoiceId` (`inv_…`, SPEC §9: a case belongs to one
 * invoice), if any, as `status`: `cancelled` when the invoice was voided or marked
 * uncollectible through the API (nothing is chased any more; no event of its own —
 * `invoice.voided` / `invoice.marked_uncollectible` tells it). The caller holds the
 * invoice's lock (lock order: invoices → dunning_cases). Returns the closed case or undefined.
 */
export async function closeInvoiceCase(
  trx: Transaction<Database>,
  clock: Clock,
  invoiceId: string,
  status: 'cancelled',
): Promise<DunningCase | undefined> {
  const open = await forUpdate(
    trx.selectFrom('dunning_cases').selectAll().where('invoice_id', '=', invoiceId).where('status', '=', 'open'),
    trx,
  ).executeTakeFirst();
  if (!open) return undefined;
  return closeCase(trx, clock, open, status);
}

/**
 * The open cases of subscriptions `subscriptionIds` in ONE statement, locked on PostgreSQL,
 * keyed by subscription id (findOpenCase for each).
 */
export async function findOpenCases(
  trx: Transaction<Database>,
  subscriptionIds: readonly string[],
): Promise<Map<string, DunningCaseRow>> {
  const found = new Map<string, DunningCaseRow>();
  if (subscriptionIds.length === 0) return found;
  const rows = await forUpdate(
    trx
      .selectFrom('dunning_cases')
      .selectAll()
      .where(inList(trx, 'subscription_id', [...new Set(subscriptionIds)]))
      // SQLite keeps no statistics and would walk every open case by the status index; the
      // unary plus keeps it on the subscriptions' own index (PostgreSQL plans by statistics).
      .where(isPostgres(trx) ? sql.ref('status') : sql`+status`, '=', 'open')
      .orderBy('id'),
    trx,
  ).execute();
  for (const row of rows) found.set(row.subscription_id, row);
  return found;
}

/**
 * closeOpenCase(…, 'recovered') for several locked open cases (their invoice paid): each
 * closed at its entry's clock with `dunning.recovered`, one statement per distinct time.
 */
export async function recoverCases(
  trx: Transaction<Database>,
  entries: readonly { clock: Clock; row: DunningCaseRow }[],
): Promise<void> {
  const byTime = new Map<string, string[]>();
  for (const { clock, row } of entries) {
    const now = clock.now().toISOString();
    const closed: DunningCaseRow = { ...row, ...closedSet('recovered', now) };
    await emitEvent(trx, clock, 'dunning.recovered', toDunningCase(closed));
    byTime.set(now, [...(byTime.get(now) ?? []), row.id]);
  }
  for (const [now, ids] of byTime) {
    await trx.updateTable('dunning_cases').set(closedSet('recovered', now)).where('id', 'in', ids).execute();
  }
}

/** The columns a case closed as `status` at `now` (ISO 8601) takes. */
function closedSet(status: Exclude<DunningCaseStatus, 'open'>, now: string) {
  return { status, closed_at: now, next_action_at: null, retry_requested_at: null, updated_at: now };
}

/** Writes `row` as closed with `status` now (no retry awaited any more); no event. */
export async function closeCase(
  trx: Transaction<Database>,
  clock: Clock,
  row: DunningCaseRow,
  status: Exclude<DunningCaseStatus, 'open'>,
): Promise<DunningCase> {
  const set = closedSet(status, clock.now().toISOString());
  const closed: DunningCaseRow = { ...row, ...set };
  await trx.updateTable('dunning_cases').set(set).where('id', '=', row.id).execute();
  return toDunningCase(closed);
}

/** Where a reminder points the customer, and the charge it reports (SPEC §10 "Dunning retries"). */
export type ReminderLinks = Pick<DunningReminder, 'hosted_invoice_url' | 'action_url' | 'charge'>;

/**
 * Sends the reminder of step `row.step + 1` on open case `row` (locked by the caller): moves
 * `next_action_at` to the following step or, after the last, to the final action (SPEC §4,
 * the schedule `ctx.config.dunningScheduleMs`), clears `retry_requested_at`, emits
 * `dunning.reminder` (the case with `step`, `final` and `links`) and records the step in
 * `dunning_steps` with that event — in that order, in `trx`. `dunning_steps` (case, step) is
 * unique: a second reminder of one step throws and rolls the transaction back. Returns the
 * reminder.
 */
export async function recordReminder(
  trx: Transaction<Database>,
  { clock, config }: DunningContext,
  row: DunningCaseRow,
  links: ReminderLinks,
): Promise<DunningReminder> {
  const schedule = config.dunningScheduleMs;
  const step = row.step + 1;
  const now = clock.now().toISOString();
  const next = nextActionAt(new Date(row.opened_at), step, schedule).toISOString();
  const set = { step, next_action_at: next, retry_requested_at: null, updated_at: now };
  await trx.updateTable('dunning_cases').set(set).where('id', '=', row.id).execute();
  const reminder: DunningReminder = { ...toDunningCase({ ...row, ...set }), final: step === schedule.length, ...links };
  const eventId = await emitEvent(trx, clock, 'dunning.reminder', reminder);
  await trx
    .insertInto('dunning_steps')
    .values({ case_id: row.id, step, final: reminder.final, event_id: eventId, taken_at: now })
    .execute();
  return reminder;
}

/**
 * Marks open case `caseId` (`dun_…`, locked by the caller) as awaiting the charge its step
 * asked for: `retry_requested_at` = `now`, and the case is not due again until `waitUntil`
 * (both ISO 8601), when the step's reminder goes out if no outcome came (SPEC §10 "Dunning
 * retries"). No event.
 */
export async function markRetryRequested(
  trx: Transaction<Database>,
  caseId: string,
  now: string,
  waitUntil: string,
): Promise<void> {
  await trx
    .updateTable('dunning_cases')
    .set({ retry_requested_at: now, next_action_at: waitUntil, updated_at: now })
    .where('id', '=', caseId)
    .execute();
}

/**
 * Deletes dunning cases `caseIds` (`dun_…`, locked by the caller) with their steps: a test
 * clock's delete (SPEC §11 "Deleting"). No events; the reminders already emitted stay.
 */
export async function deleteDunningCases(trx: Transaction<Database>, caseIds: readonly string[]): Promise<void> {
  if (caseIds.length === 0) return;
  await trx.deleteFrom('dunning_steps').where('case_id', 'in', caseIds).execute();
  await trx.deleteFrom('dunning_cases').where('id', 'in', caseIds).execute();
}

/**
 * Points the cases of payment `fromPaymentId` at `toPaymentId` (`pay_…` ids): the payments
 * module merged the first into the second (two reports of one Stripe payment, SPEC §5), so a
 * case keeps naming a payment that exists. No event: `payment.merged` tells it.
 */
export async function repointCasePayments(
  trx: Transaction<Database>,
  clock: Clock,
  fromPaymentId: string,
  toPaymentId: string,
): Promise<void> {
  await trx
    .updateTable('dunning_cases')
    .set({ payment_id: toPaymentId, updated_at: clock.now().toISOString() })
    .where('payment_id', '=', fromPaymentId)
    .execute();
}
