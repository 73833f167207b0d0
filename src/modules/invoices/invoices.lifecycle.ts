// Issues invoices and applies their transitions (SPEC §9): the only writer of `invoices`.
// Each change writes the row and emits its `invoice.*` event in the caller's transaction
// (SPEC §6 outbox). Lock order (db/locking.ts): subscriptions → invoices → dunning_cases.
import { randomBytes } from 'node:crypto';
import { type Kysely, sql, type Transaction } from 'kysely';
import type { Config } from '../../config.ts';
import { addToCount } from '../../db/counts.ts';
import { insertRows, inList } from '../../db/bulk.ts';
import type { Database } from '../../db/database.ts';
import { forUpdate } from '../../db/locking.ts';
import { NotFoundError } from '../../http/errors.ts';
import { pickFields } from '../../http/schemas.ts';
import type { Clock } from '../../shared/clock.ts';
import { isIdOf, newId } from '../../shared/ids.ts';
import { emitEvent } from '../events/events.service.ts';
import type { Topic } from '../events/events.topics.ts';
import { type InvoiceEvent, nextInvoiceStatus } from './invoices.status.ts';
import {
  addsToTotal,
  type Invoice,
  type InvoiceContent,
  type InvoiceLine,
  invoiceSchema,
  type InvoiceTaxAmount,
} from './invoices.schemas.ts';
import type { InvoiceBillingReason, InvoiceKind, InvoiceRow, InvoicesTable } from '../../db/tables/invoices.table.ts';
import { compiledQuery, type Param } from '../../db/compiled-queries.ts';

export type { Invoice, InvoiceLine };

/**
 * What issuing and moving invoices needs: the clock, the numbering / URL settings and
 * INVOICE_FINALIZE_DELAY (when a renewal's draft is finalized). Deps fits.
 */
export interface InvoiceContext {
  clock: Clock;
  config: Pick<Config, 'invoicePrefix' | 'publicUrl' | 'invoiceFinalizeDelayMs'>;
}

/** `<publicUrl>/i/<token>`: the hosted invoice page (SPEC §9). */
export function hostedInvoiceUrl(publicUrl: string, token: string): string {
  return `${publicUrl}/i/${token}`;
}

/**
 * An invoices row as the API and events show it: `lines` and `metadata` parsed,
 * `amount_remaining` = amount_due − amount_paid (minor units), `hosted_invoice_url` built
 * from `publicUrl` (PUBLIC_URL) and the row's token — null while it has no number (a draft, or
 * a draft voided): never final, so no page (Stripe's drafts have no hosted URL either).
 */
export function toInvoice(row: InvoiceRow, publicUrl: string): Invoice {
  return pickFields(invoiceSchema, {
    ...row,
    subtotal: Number(row.subtotal),
    total_discount: Number(row.total_discount),
    total_tax: Number(row.total_tax),
    total_tax_amounts: row.total_tax_amounts === '[]' ? [] : (JSON.parse(row.total_tax_amounts) as InvoiceTaxAmount[]),
    reverse_charge: Boolean(row.reverse_charge),
    total: Number(row.total),
    applied_balance: Number(row.applied_balance),
    amount_due: Number(row.amount_due),
    pre_payment_credit_notes_amount: Number(row.pre_payment_credit_notes_amount),
    post_payment_credit_notes_amount: Number(row.post_payment_credit_notes_amount),
    amount_paid: Number(row.amount_paid),
    amount_remaining: Number(row.amount_due) - Number(row.amount_paid),
    lines: JSON.parse(row.lines) as InvoiceLine[],
    hosted_invoice_url: row.number === null ? null : hostedInvoiceUrl(publicUrl, row.hosted_token),
    metadata: JSON.parse(row.metadata) as Record<string, string>,
  });
}

/** Thrown when the transition table forbids `event` in the invoice's state. */
export class ForbiddenInvoiceTransitionError extends Error {
  readonly status: InvoiceRow['status'];
  readonly event: InvoiceEvent;
  constructor(status: InvoiceRow['status'], event: InvoiceEvent) {
    super(`${event} is not allowed for a ${status} invoice`);
    this.name = 'ForbiddenInvoiceTransitionError';
    this.status = status;
    this.event = event;
  }
}

/** The invoice `id`, or undefined (also for malformed ids: no round trip). */
export async function findInvoiceRow(db: Kysely<Database>, id: string): Promise<InvoiceRow | undefined> {
  if (!isIdOf('invoice', id)) return undefined;
  return db.selectFrom('invoices').selectAll().where('id', '=', id).executeTakeFirst();
}

/**
 * The invoice whose hosted page token is `token` (SPEC §9 `/i/{token}`), or undefined — also
 * for one never finalized (a draft, or a draft voided: no number), which has no hosted page
 * (SPEC §12 "Drafts").
 */
export async function findInvoiceRowByToken(db: Kysely<Database>, token: string): Promise<InvoiceRow | undefined> {
  if (!/^[A-Za-z0-9_-]{43}$/.test(token)) return undefined;
  return db
    .selectFrom('invoices')
    .selectAll()
    .where('hosted_token', '=', token)
    .where('number', 'is not', null)
    .executeTakeFirst();
}

/**
 * Reads invoice `id` inside `trx`, locked on PostgreSQL so concurrent changes (a payment, a
 * void) queue and each sees the state the previous one left. Throws 404 `not_found` for
 * unknown or malformed ids.
 */
const invoiceForUpdate = compiledQuery((db, param: Param<{ id: string }>) =>
  forUpdate(db.selectFrom('invoices').selectAll().where('id', '=', param('id')), db),
);

export async function lockInvoice(trx: Transaction<Database>, id: string): Promise<InvoiceRow> {
  const row = isIdOf('invoice', id) ? await invoiceForUpdate.executeTakeFirst(trx, { id }) : undefined;
  if (!row) throw new NotFoundError('invoice', id);
  return row;
}

/**
 * The next invoice number for `prefix`, `<prefix>-<000001>` (six digits at least), moved in
 * `trx`: the counter row stays locked until commit (PostgreSQL) and a rollback gives the
 * number back, so numbers are gap-free and unique across instances (SPEC §9).
 */
export async function nextInvoiceNumber(trx: Transaction<Database>, prefix: string): Promise<string> {
  const row = await trx
    .insertInto('invoice_numbers')
    .values({ prefix, last_number: 1 })
    .onConflict((conflict) =>
      conflict.column('prefix').doUpdateSet({ last_number: sql<number>`invoice_numbers.last_number + 1` }),
    )
    .returning('last_number')
    .executeTakeFirstOrThrow();
  return `${prefix}-${String(Number(row.last_number)).padStart(6, '0')}`;
}

/**
 * The number sequence an invoice takes (SPEC §9, §11): `invoicePrefix` (INVOICE_PREFIX) for
 * real customers; `<invoicePrefix>-<clock id>` for a test clock's, whose invoices are numbered
 * within their clock (`INV-clock_01J…-000001`), so neither advancing nor deleting a clock
 * takes numbers from — or leaves gaps in — the real, gap-free sequence.
 */
export function invoiceNumberPrefix(invoicePrefix: string, testClockId: string | null): string {
  return testClockId === null ? invoicePrefix : `${invoicePrefix}-${testClockId}`;
}

/**
 * Forgets the number sequence of test clock `testClockId` (its clock is being deleted with
 * its invoices, SPEC §11), whatever INVOICE_PREFIX was when it was numbered: a real prefix is
 * letters and digits only, so only a clock's sequence ends in `-<clock id>`.
 */
export async function deleteTestClockInvoiceNumbers(trx: Transaction<Database>, testClockId: string): Promise<void> {
  await trx.deleteFrom('invoice_numbers').where('prefix', 'like', `%-${testClockId}`).execute();
}

/**
 * Deletes invoices `invoiceIds` (`inv_…`, locked by the caller) and uncounts them
 * (db/counts.ts): a test clock's delete (SPEC §11 "Deleting"), after their payment attempts,
 * their dunning cases and the payments' links to them are gone. No events; the invoices'
 * events already emitted stay.
 */
export async function deleteInvoices(trx: Transaction<Database>, invoiceIds: readonly string[]): Promise<void> {
  if (invoiceIds.length === 0) return;
  await trx.deleteFrom('invoices').where('id', 'in', invoiceIds).execute();
  await addToCount(trx, 'invoices', -invoiceIds.length);
}

/** What to bill: the invoice's owner, period (ISO 8601), due time, and its lines and totals as composed. */
export interface InvoiceDraft {
  customerId: string;
  /** The customer's test clock (SPEC §11), copied onto the invoice; null: real time. */
  testClockId?: string | null;
  /** Null for a one-off invoice (SPEC §12): no subscription, no period of one. */
  subscriptionId: string | null;
  /**
   * What a subscription's invoice bills: `period` (default) its period's invoice, one per
   * (subscription, period); `proration` the prorations of a plan change issued at once (SPEC
   * §13 `always_invoice`) or `usage` a closed period's usage billed apart (SPEC §15 "Paid in
   * advance"), each always new. Ignored without a subscription (`one_off`).
   */
  kind?: Exclude<InvoiceKind, 'one_off'>;
  /** Why it is issued, in Stripe's words (SPEC §9 "Billing reason"): stored as given. */
  billingReason: InvoiceBillingReason;
  /** ISO 4217, upper case: every line must be in it. */
  currency: string;
  periodStart: string;
  periodEnd: string;
  dueAt: string;
  /** The lines and totals (minor units) composeInvoice made (src/billing/compose, SPEC §12). */
  content: InvoiceContent;
  metadata?: Record<string, string>;
  /** When the worker charges the customer's saved method (SPEC §10); default null: it does not. */
  nextPaymentAttemptAt?: string | null;
  /**
   * Issue it `draft` (SPEC §12 "Drafts"), finalized at this instant (ISO 8601); default null:
   * final (`open`) at once. A draft takes no number and is never charged until finalized.
   */
  finalizesAt?: string | null;
}

/** Throws unless `draft.content` adds up as composeInvoice makes it (see issueInvoice). */
function checkContent(draft: InvoiceDraft): void {
  const { content } = draft;
  const sum = content.lines.reduce((total, line) => (addsToTotal(line) ? total + BigInt(line.amount) : total), 0n);
  if (
    content.lines.some((line) => line.currency !== draft.currency) ||
    sum !== BigInt(content.total) ||
    content.amount_due !== Math.max(content.total, 0) - content.applied_balance ||
    content.amount_due < 0
  ) {
    throw new Error(
      `invoice content does not add up: lines in ${draft.currency}, total ${sum}, due ${content.amount_due}`,
    );
  }
}

/** The row issuing stores for `draft` (checked) of `kind`, numbered `number` (null: a draft). */
function newInvoiceRow(
  ctx: InvoiceContext,
  draft: InvoiceDraft,
  kind: InvoiceKind,
  number: string | null,
): InvoicesTable {
  const { content } = draft;
  const now = ctx.clock.now().toISOString();
  const lines: InvoiceLine[] = content.lines.map((line) => ({ id: newId('invoiceLine'), ...line }));
  const finalizesAt = draft.finalizesAt ?? null;
  return {
    id: newId('invoice'),
    number,
    customer_id: draft.customerId,
    test_clock_id: draft.testClockId ?? null,
    subscription_id: draft.subscriptionId,
    kind,
    billing_reason: draft.billingReason,
    status: finalizesAt === null ? 'open' : 'draft',
    currency: draft.currency,
    subtotal: content.subtotal,
    total_discount: content.total_discount,
    total_tax: content.total_tax,
    total_tax_amounts: JSON.stringify(content.total_tax_amounts),
    reverse_charge: content.reverse_charge,
    total: content.total,
    applied_balance: content.applied_balance,
    amount_due: content.amount_due,
    pre_payment_credit_notes_amount: 0,
    post_payment_credit_notes_amount: 0,
    amount_paid: 0,
    period_start: draft.periodStart,
    period_end: draft.periodEnd,
    due_at: draft.dueAt,
    attempt_count: 0,
    next_payment_attempt_at: finalizesAt === null ? (draft.nextPaymentAttemptAt ?? null) : null,
    charges_stopped_at: null,
    finalizes_at: finalizesAt,
    lines: JSON.stringify(lines),
    hosted_token: randomBytes(32).toString('base64url'),
    paid_at: null,
    voided_at: null,
    marked_uncollectible_at: null,
    metadata: JSON.stringify(draft.metadata ?? {}),
    created_at: now,
    updated_at: now,
  };
}

/**
 * Issues the invoice of `draft`'s (subscription, period) in `trx`, exactly once (SPEC §9):
 * when one exists already it is returned with `created: false` and nothing is written (a
 * one-off invoice, of no subscription, and a subscription's `proration` or `usage` invoice are always new). Called only by the billing core's
 * issue.ts, which composes `draft.content`.
 * Otherwise it takes the next number of its sequence (invoiceNumberPrefix), stores the invoice `open` (or `paid` at once when it
 * owes 0) — or, given `draft.finalizesAt`, stores it `draft` with no number (finalizeInvoice numbers it later), moves the kept `invoices` total (db/counts.ts) and emits `invoice.created` (and `invoice.paid`). The caller MUST hold the
 * subscription's lock (lockSubscription / a claimed row): that is what makes "exactly once"
 * hold between workers; the unique (subscription_id, period_start) index of `period` invoices is the backstop,
 * and its violation rolls the whole transaction back (so no number is lost). Lines and
 * totals are stored as `draft.content` has them, each line given an `il_…` id. Throws when a
 * line is in another currency than `draft.currency` or the totals do not add up (total = the
 * lines that addsToTotal, amount_due = max(total, 0) − applied_balance ≥ 0): content composeInvoice did not make.
 */
export async function issueInvoice(
  trx: Transaction<Database>,
  ctx: InvoiceContext,
  draft: InvoiceDraft,
): Promise<{ invoice: Invoice; created: boolean }> {
  const kind: InvoiceKind = draft.subscriptionId === null ? 'one_off' : (draft.kind ?? 'period');
  const existing =
    kind !== 'period'
      ? undefined
      : await trx
          .selectFrom('invoices')
          .selectAll()
          .where('subscription_id', '=', draft.subscriptionId!)
          .where('period_start', '=', draft.periodStart)
          // A literal: the partial unique index's predicate.
          .where('kind', '=', sql.lit('period'))
          .executeTakeFirst();
  if (existing) return { invoice: toInvoice(existing, ctx.config.publicUrl), created: false };
  checkContent(draft);
  const finalizesAt = draft.finalizesAt ?? null;
  // A draft's number is taken when it is finalized: a voided draft leaves no gap.
  const number =
    finalizesAt === null
      ? await nextInvoiceNumber(trx, invoiceNumberPrefix(ctx.config.invoicePrefix, draft.testClockId ?? null))
      : null;
  const row = newInvoiceRow(ctx, draft, kind, number);
  await trx.insertInto('invoices').values(row).execute();
  await addToCount(trx, 'invoices', 1);
  const invoice = toInvoice(row, ctx.config.publicUrl);
  await emitEvent(trx, ctx.clock, 'invoice.created', invoice);
  if (row.amount_due === 0 && row.status === 'open') {
    return { invoice: await transitionInvoice(trx, ctx, row, 'paid'), created: true };
  }
  return { invoice, created: true };
}

/**
 * `count` (≥ 1) consecutive numbers of `prefix`'s sequence (see nextInvoiceNumber), in order,
 * moved in `trx` by ONE statement: the counter advances by `count`, locked until commit on
 * PostgreSQL; a rollback gives them all back (gap-free, SPEC §9).
 */
export async function nextInvoiceNumbers(trx: Transaction<Database>, prefix: string, count: number): Promise<string[]> {
  const row = await trx
    .insertInto('invoice_numbers')
    .values({ prefix, last_number: count })
    .onConflict((conflict) =>
      conflict.column('prefix').doUpdateSet({ last_number: sql<number>`invoice_numbers.last_number + ${count}` }),
    )
    .returning('last_number')
    .executeTakeFirstOrThrow();
  const first = Number(row.last_number) - count + 1;
  return Array.from({ length: count }, (_, i) => `${prefix}-${String(first + i).padStart(6, '0')}`);
}

/**
 * The `period` invoices of `periods` (subscription id and period start, ISO 8601) that exist
 * already, in one read: the batch form of issueInvoice's "issued already?" check. Keyed
 * `<subscription id> <period start as epoch ms>`.
 */
export async function findPeriodInvoices(
  db: Kysely<Database>,
  periods: readonly { subscriptionId: string; periodStart: string }[],
): Promise<Map<string, InvoiceRow>> {
  const found = new Map<string, InvoiceRow>();
  if (periods.length === 0) return found;
  const rows = await db
    .selectFrom('invoices')
    .selectAll()
    .where(inList(db, 'subscription_id', [...new Set(periods.map((p) => p.subscriptionId))]))
    .where('period_start', 'in', [...new Set(periods.map((p) => p.periodStart))])
    .where('kind', '=', sql.lit('period'))
    .execute();
  for (const row of rows) found.set(periodKey(row.subscription_id!, row.period_start), row);
  return found;
}

/** findPeriodInvoices' key of a (subscription, period start). */
export function periodKey(subscriptionId: string, periodStart: string): string {
  return `${subscriptionId} ${Date.parse(periodStart)}`;
}

/**
 * Issues new `open` invoices of `drafts` (each a subscription's `period` invoice, or as
 * issueInvoice otherwise) in `trx` in a handful of statements: numbers taken per sequence in
 * one statement each (in `drafts` order), the rows in one multi-row insert, the kept total
 * moved once, `invoice.created` emitted for each (and `invoice.paid` for one owing 0), in
 * order. The batch form of issueInvoice for drafts the caller KNOWS have no invoice yet
 * (findPeriodInvoices, under the subscriptions' locks): it does not look; the unique
 * (subscription_id, period_start) index of `period` invoices is the backstop and rolls the
 * transaction back. Throws as issueInvoice for content that does not add up, and for a draft
 * with `finalizesAt` (drafts go through issueInvoice).
 */
export async function issueInvoices(
  trx: Transaction<Database>,
  ctx: InvoiceContext,
  drafts: readonly InvoiceDraft[],
): Promise<Invoice[]> {
  if (drafts.length === 0) return [];
  const prefixes = new Map<string, number[]>();
  drafts.forEach((draft, i) => {
    checkContent(draft);
    if ((draft.finalizesAt ?? null) !== null) throw new Error('issueInvoices issues final invoices only');
    const prefix = invoiceNumberPrefix(ctx.config.invoicePrefix, draft.testClockId ?? null);
    const indexes = prefixes.get(prefix);
    if (indexes) indexes.push(i);
    else prefixes.set(prefix, [i]);
  });
  const numbers: string[] = [];
  for (const [prefix, indexes] of prefixes) {
    const taken = await nextInvoiceNumbers(trx, prefix, indexes.length);
    indexes.forEach((index, j) => (numbers[index] = taken[j]!));
  }
  const rows = drafts.map((draft, i) =>
    newInvoiceRow(ctx, draft, draft.subscriptionId === null ? 'one_off' : (draft.kind ?? 'period'), numbers[i]!),
  );
  await insertRows(trx, 'invoices', rows);
  await addToCount(trx, 'invoices', rows.length);
  const invoices: Invoice[] = [];
  for (const row of rows) {
    const invoice = toInvoice(row, ctx.config.publicUrl);
    await emitEvent(trx, ctx.clock, 'invoice.created', invoice);
    invoices.push(row.amount_due === 0 ? await transitionInvoice(trx, ctx, row, 'paid') : invoice);
  }
  return invoices;
}

/**
 * Finalizes the locked `draft` invoice `row` (SPEC §12 "Drafts"): it takes the next number of
 * its sequence (invoiceNumberPrefix; gap-free, given now and not at creation), becomes
 * `open` with `finalizes_at` cleared and `changes` applied (the billing core schedules its
 * charge there), and emits `invoice.finalized`; one that owes nothing (its credit covered it)
 * is then `paid` (`invoice.paid`). All in `trx`. Throws ForbiddenInvoiceTransitionError (and
 * writes nothing) unless `row` is a draft.
 */
export async function finalizeInvoice(
  trx: Transaction<Database>,
  ctx: InvoiceContext,
  row: InvoiceRow,
  changes: Pick<InvoiceChanges, 'next_payment_attempt_at'> = {},
): Promise<Invoice> {
  if (!nextInvoiceStatus(row.status, 'finalize')) throw new ForbiddenInvoiceTransitionError(row.status, 'finalize');
  const number = await nextInvoiceNumber(trx, invoiceNumberPrefix(ctx.config.invoicePrefix, row.test_clock_id));
  const finalized = { ...row, number, finalizes_at: null };
  const invoice = await transitionInvoice(trx, ctx, finalized, 'finalize', {
    ...changes,
    number,
    finalizes_at: null,
  });
  if (Number(row.amount_due) > 0) return invoice;
  return transitionInvoice(trx, ctx, { ...finalized, status: 'open' }, 'paid');
}

/**
 * Voids every `draft` invoice of subscription `subscriptionId` (`invoice.voided` each; a draft
 * holds no number, so no gap is left), in `trx`. For a subscription that stops before its
 * draft is finalized — cancelled now or paused (SPEC §12 "Drafts"): the draft bills a period
 * the customer no longer gets, and finalizing it would charge the saved method. The caller
 * holds the subscription's lock (lock order: subscriptions → invoices). Returns the voided
 * invoices, oldest first.
 */
export async function voidDraftsOfSubscription(
  trx: Transaction<Database>,
  ctx: InvoiceContext,
  subscriptionId: string,
): Promise<Invoice[]> {
  const drafts = await forUpdate(
    trx
      .selectFrom('invoices')
      .selectAll()
      .where('subscription_id', '=', subscriptionId)
      .where('status', '=', 'draft')
      .orderBy('period_start')
      .orderBy('id'),
    trx,
  ).execute();
  const voided: Invoice[] = [];
  for (const draft of drafts) voided.push(await transitionInvoice(trx, ctx, draft, 'void'));
  return voided;
}

export type InvoiceChanges = Partial<
  Pick<
    InvoicesTable,
    'amount_paid' | 'attempt_count' | 'next_payment_attempt_at' | 'charges_stopped_at' | 'number' | 'finalizes_at'
  >
>;

/** The timestamp column each target status stamps with the transition's time. */
const STAMPED = {
  paid: 'paid_at',
  void: 'voided_at',
  uncollectible: 'marked_uncollectible_at',
} as const satisfies Partial<Record<InvoiceRow['status'], keyof InvoicesTable>>;

/**
 * Moves `row` by `event` per the transition table (invoices.status.ts), applying `changes`,
 * stamping `paid_at` / `voided_at` / `marked_uncollectible_at` with the clock's time, and
 * emits the transition's topic with the resulting invoice — all in `trx`. Throws
 * ForbiddenInvoiceTransitionError (and writes nothing) when the table has no entry.
 */
export async function transitionInvoice(
  trx: Transaction<Database>,
  ctx: InvoiceContext,
  row: InvoiceRow,
  event: InvoiceEvent,
  changes: InvoiceChanges = {},
): Promise<Invoice> {
  const transition = nextInvoiceStatus(row.status, event);
  if (!transition) throw new ForbiddenInvoiceTransitionError(row.status, event);
  const now = ctx.clock.now().toISOString();
  const stamped = transition.to in STAMPED ? STAMPED[transition.to as keyof typeof STAMPED] : undefined;
  const set = {
    // Only an open invoice is charged (SPEC §10): leaving `open` ends its automatic attempts.
    next_payment_attempt_at: null,
    // A draft voided is final: it will never be finalized.
    finalizes_at: null,
    ...changes,
    status: transition.to,
    ...(stamped === undefined ? {} : { [stamped]: now }),
    updated_at: now,
  };
  await trx.updateTable('invoices').set(set).where('id', '=', row.id).execute();
  const invoice = toInvoice({ ...row, ...set }, ctx.config.publicUrl);
  await emitEvent(trx, ctx.clock, transition.topic, invoice);
  return invoice;
}

/**
 * Writes `changes` (amount paid, attempt count, next attempt time) to `row` without moving its
 * status, and emits `topic` with the resulting invoice when one is given — all in `trx`.
 * Returns the invoice after.
 */
export async function updateInvoice(
  trx: Transaction<Database>,
  ctx: InvoiceContext,
  row: InvoiceRow,
  changes: InvoiceChanges,
  topic?: Topic,
): Promise<Invoice> {
  const set = { ...changes, updated_at: ctx.clock.now().toISOString() };
  await trx.updateTable('invoices').set(set).where('id', '=', row.id).execute();
  const invoice = toInvoice({ ...row, ...set }, ctx.config.publicUrl);
  if (topic) await emitEvent(trx, ctx.clock, topic, invoice);
  return invoice;
}

/**
 * transitionInvoice(row, 'paid', {amount_paid: amount_due}) for several locked invoices, one
 * statement per distinct time (one for a batch in one clock): each invoice paid in full at its
 * entry's clock, `invoice.paid` each, in entry order. For a charge batch (billing/charges.batch.ts).
 * Throws ForbiddenInvoiceTransitionError (nothing written) when one of them cannot become paid.
 */
export async function markInvoicesPaidInFull(
  trx: Transaction<Database>,
  config: InvoiceContext['config'],
  entries: readonly { clock: Clock; row: InvoiceRow }[],
): Promise<Invoice[]> {
  const invoices: Invoice[] = [];
  const byTime = new Map<string, string[]>();
  for (const { row } of entries) {
    if (!nextInvoiceStatus(row.status, 'paid')) throw new ForbiddenInvoiceTransitionError(row.status, 'paid');
  }
  for (const { clock, row } of entries) {
    const now = clock.now().toISOString();
    const set = {
      next_payment_attempt_at: null,
      finalizes_at: null,
      amount_paid: row.amount_due,
      status: 'paid' as const,
      paid_at: now,
      updated_at: now,
    };
    const invoice = toInvoice({ ...row, ...set }, config.publicUrl);
    await emitEvent(trx, clock, 'invoice.paid', invoice);
    invoices.push(invoice);
    const ids = byTime.get(now);
    if (ids) ids.push(row.id);
    else byTime.set(now, [row.id]);
  }
  for (const [now, ids] of byTime) {
    await trx
      .updateTable('invoices')
      .set((eb) => ({
        next_payment_attempt_at: null,
        finalizes_at: null,
        amount_paid: eb.ref('amount_due'),
        status: 'paid',
        paid_at: now,
        updated_at: now,
      }))
      .where(inList(trx, 'id', ids))
      .execute();
  }
  return invoices;
}

/**
 * Sets `next_payment_attempt_at` of invoices `ids` to `at` (ISO 8601; null: none) in ONE
 * statement, as updateInvoice would each (no event): a charge batch leasing its invoices.
 */
export async function setNextPaymentAttempts(
  trx: Transaction<Database>,
  ctx: Pick<InvoiceContext, 'clock'>,
  ids: readonly string[],
  at: string | null,
): Promise<void> {
  if (ids.length === 0) return;
  await trx
    .updateTable('invoices')
    .set({ next_payment_attempt_at: at, updated_at: ctx.clock.now().toISOString() })
    .where(inList(trx, 'id', ids))
    .execute();
}

/** What a credit note (or its void) moves on an invoice, minor units, signed: + when issued, − when voided. */
export interface InvoiceCreditChange {
  /** Taken off `amount_due` (pre-payment), or given back to it (a void). */
  prePayment: number;
  /** Returned after payment (refund, credit, out of band), or no longer (a void). */
  postPayment: number;
}

/**
 * Applies a credit note's amounts to the locked finalized invoice `row` in `trx` (SPEC §14
 * "Credit notes"; Stripe's pre_payment_credit_notes_amount and post_payment_credit_notes_amount):
 * `amount_due` falls by `change.prePayment` (rises by it when a note is voided) and the two
 * totals move. An open or uncollectible invoice left owing nothing becomes `paid`
 * (`invoice.paid`, as Stripe marks an invoice a credit note settles); otherwise no invoice
 * event (the `credit_note.*` event tells it). Returns the invoice after and whether it became
 * paid. Throws (a caller's bug) when `amount_due` would fall below `amount_paid`.
 */
export async function applyCreditNoteToInvoice(
  trx: Transaction<Database>,
  ctx: InvoiceContext,
  row: InvoiceRow,
  change: InvoiceCreditChange,
): Promise<{ invoice: Invoice; paid: boolean }> {
  const amountDue = Number(row.amount_due) - change.prePayment;
  if (amountDue < Number(row.amount_paid)) {
    throw new Error(`invoice ${row.id}: a credit note would take amount_due below amount_paid`);
  }
  const set = {
    amount_due: amountDue,
    pre_payment_credit_notes_amount: Number(row.pre_payment_credit_notes_amount) + change.prePayment,
    post_payment_credit_notes_amount: Number(row.post_payment_credit_notes_amount) + change.postPayment,
    updated_at: ctx.clock.now().toISOString(),
  };
  await trx.updateTable('invoices').set(set).where('id', '=', row.id).execute();
  const after = { ...row, ...set };
  if (change.prePayment > 0 && amountDue === Number(row.amount_paid) && nextInvoiceStatus(row.status, 'paid')) {
    return { invoice: await transitionInvoice(trx, ctx, after, 'paid'), paid: true };
  }
  return { invoice: toInvoice(after, ctx.config.publicUrl), paid: false };
}
