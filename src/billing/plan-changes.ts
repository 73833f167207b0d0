// Plan and quantity changes (SPEC §13): PATCH /api/subscriptions/{id}, the cancel of a
// scheduled change, and POST /api/invoices/preview. The change and its preview read the same
// facts and call the same rules (plan-change-rules.ts) and the same pipeline, so a preview
// shows, to the minor unit, the invoice the change issues (or the renewal then issues).
import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../db/database.ts';
import type { SubscriptionRow } from '../db/tables/subscriptions.table.ts';
import { transactionWithRetry } from '../db/transaction.ts';
import { NotFoundError, StateConflictError, ValidationError } from '../http/errors.ts';
import type { Clock } from '../shared/clock.ts';
import { isIdOf } from '../shared/ids.ts';
import { hasDefaultPaymentMethod } from '../modules/payment-methods/payment-methods.ts';
import { findPlan } from '../modules/plans/plans.service.ts';
import type { PlanRow } from '../db/tables/plans.table.ts';
import {
  lockSubscription,
  lockSubscriptionForChange,
  type PreviousAttributes,
  type Subscription,
  toSubscription,
  updateSubscription,
} from '../modules/subscriptions/subscriptions.lifecycle.ts';
import {
  addPendingItems,
  markPendingItemsInvoiced,
  waitingPendingItems,
} from '../modules/subscriptions/subscriptions.pending-items.ts';
import { clockFor, withClockFor } from '../modules/test-clocks/test-clocks.time.ts';
import { oneOffInvoiceInput, periodInvoiceInput } from './compose/input.ts';
import type { InvoiceLineDraft } from './compose/types.ts';
import { type ChangeDecision, type ChangePlan, type ChangeRequest, decideChange } from './plan-change-rules.ts';
import {
  composePreview,
  type InvoicePreview,
  type IssueContext,
  issueChangePeriodInvoice,
  issueOneOffInvoice,
  nextUninvoicedPeriod,
  type PreviewTarget,
  taxedBy,
} from './issue.ts';
import { renewalTerms } from './renewal-terms.ts';

export type { ChangeRequest };

/** A change decided for a subscription row: the plans before and after, and what it does. */
interface PreparedChange {
  row: SubscriptionRow;
  from: { plan: ChangePlan; quantity: number };
  to: { plan: ChangePlan; quantity: number };
  decision: ChangeDecision;
}

/**
 * Reads the plans of `request` against `row` and decides it at `now` (plan-change-rules.ts).
 * Throws 404 for an unknown plan, and what decideChange throws (400, 409).
 */
async function prepareChange(
  db: Kysely<Database> | Transaction<Database>,
  row: SubscriptionRow,
  request: ChangeRequest,
  now: Date,
): Promise<PreparedChange> {
  const current = await findPlan(db, row.plan_id);
  if (!current) throw new Error(`plan ${row.plan_id} of subscription ${row.id} is missing`);
  const next = request.plan_id === undefined ? current : await findPlan(db, request.plan_id);
  if (!next) throw new NotFoundError('plan', request.plan_id!);
  const from = { plan: current, quantity: row.quantity };
  const to = { plan: next, quantity: request.quantity ?? row.quantity };
  const decision = decideChange({
    status: row.status,
    period_start: row.current_period_start!,
    period_end: row.current_period_end!,
    from,
    to,
    request,
    now,
  });
  return { row, from, to, decision };
}

/** The fields a change moves, as they were (the event's `previous_attributes`). */
function previousOf(row: SubscriptionRow, keys: readonly (keyof PreviousAttributes)[]): PreviousAttributes {
  const shown = toSubscription(row);
  return Object.fromEntries(keys.map((key) => [key, shown[key]])) as PreviousAttributes;
}

const CLEARED = { pending_plan_id: null, pending_quantity: null, pending_effective_at: null } as const;

/**
 * Changes subscription `id`'s plan and/or quantity (SPEC §13, PATCH /api/subscriptions/{id}):
 * - a trial's swap: plan and quantity now, no lines, the trial goes on;
 * - `effective: period_end` (a downgrade's default): `pending_update` stored for the period
 *   end (`subscription.update_scheduled`), applied by the renewal;
 * - now in the same period: plan and quantity now (`subscription.updated` with
 *   `previous_attributes`); the proration lines wait for the next invoice
 *   (`create_prorations`), are invoiced now with the items already waiting
 *   (`always_invoice`: issue.ts, due now, charged at once when the customer has a saved
 *   default method; a negative total becomes credit), or are none (`none`);
 * - a new period (interval change, `billing_cycle_anchor: now`): the anchor and the period
 *   start at the proration date and that period's invoice is issued now with the old plan's
 *   unused time credited (unless `none`) and the items waiting.
 * An immediate change replaces a scheduled one. All in one transaction, under the
 * subscription's lock (taken without waiting on PostgreSQL: 409 `conflict` while another
 * request holds it). `ctx` is Deps (clock, invoice settings). Throws 404 (subscription, plan),
 * 409 (state: CANNOT_CHANGE; a concurrent change), 400 (decideChange's rules). Returns the
 * subscription after.
 */
export async function changeSubscription(
  db: Kysely<Database>,
  apiCtx: IssueContext,
  id: string,
  request: ChangeRequest,
): Promise<Subscription> {
  return transactionWithRetry(db, async (trx) => {
    const row = await lockSubscriptionForChange(trx, id);
    const ctx = await withClockFor(trx, apiCtx, row.test_clock_id);
    const { clock } = ctx;
    const { to, decision } = await prepareChange(trx, row, request, clock.now());
    if (decision.kind === 'scheduled') {
      return updateSubscription(
        trx,
        clock,
        row,
        { pending_plan_id: to.plan.id, pending_quantity: to.quantity, pending_effective_at: decision.effective_at },
        'subscription.update_scheduled',
        previousOf(row, ['pending_update']),
      );
    }
    const swapped = { plan_id: to.plan.id, quantity: to.quantity, ...CLEARED };
    if (decision.kind === 'trial_swap') {
      return updateSubscription(
        trx,
        clock,
        row,
        swapped,
        'subscription.updated',
        previousOf(row, ['plan_id', 'quantity', 'pending_update']),
      );
    }
    const charge = (await hasDefaultPaymentMethod(trx, row.customer_id)) ? clock.now().toISOString() : null;
    if (decision.kind === 'new_period') {
      const changes = {
        ...swapped,
        billing_cycle_anchor: decision.proration_date,
        current_period_start: decision.period.start.toISOString(),
        current_period_end: decision.period.end.toISOString(),
      };
      const previous = previousOf(row, [
        'plan_id',
        'quantity',
        'pending_update',
        'billing_cycle_anchor',
        'current_period_start',
        'current_period_end',
      ]);
      const subscription = await updateSubscription(trx, clock, row, changes, 'subscription.updated', previous);
      const waiting = await waitingPendingItems<InvoiceLineDraft>(trx, row.id);
      const plan = await findPlan(trx, to.plan.id);
      const issued = await issueChangePeriodInvoice(trx, ctx, { ...row, ...changes }, plan!, decision.period, charge, [
        ...waiting.lines,
        ...decision.lines,
      ]);
      if (!issued.created) {
        throw new ValidationError(
          'that new period has an invoice already: pass a later proration_date',
          'proration_date',
        );
      }
      await markPendingItemsInvoiced(trx, waiting.ids, issued.invoice.id);
      return subscription;
    }
    const subscription = await updateSubscription(
      trx,
      clock,
      row,
      swapped,
      'subscription.updated',
      previousOf(row, ['plan_id', 'quantity', 'pending_update']),
    );
    if (decision.behavior === 'create_prorations') await addPendingItems(trx, clock, row, decision.lines);
    if (decision.behavior === 'always_invoice') {
      const waiting = await waitingPendingItems<InvoiceLineDraft>(trx, row.id);
      const invoice = await issueOneOffInvoice(trx, ctx, {
        ...prorationInvoiceShape(row, decision.proration_date),
        reason: 'subscription_update',
        taxedBy: taxedBy(row, (await findPlan(trx, to.plan.id))!),
        currency: to.plan.currency,
        testClockId: row.test_clock_id,
        items: [...waiting.lines, ...decision.lines],
        dueAt: clock.now().toISOString(),
        nextPaymentAttemptAt: charge,
        metadata: { subscription_id: row.id },
      });
      await markPendingItemsInvoiced(trx, waiting.ids, invoice.id);
    }
    return subscription;
  });
}

/** The customer, currency and span of a proration invoice issued at `prorationDate`. */
function prorationInvoiceShape(row: SubscriptionRow, prorationDate: string) {
  return {
    customerId: row.customer_id,
    periodStart: prorationDate,
    periodEnd: row.current_period_end!,
  };
}

/**
 * Cancels the change scheduled for subscription `id`'s period end (DELETE
 * /api/subscriptions/{id}/pending-update, SPEC §13): `pending_update` becomes null
 * (`subscription.updated` with `previous_attributes`). Throws 404 for an unknown
 * subscription, 409 `validation_error` when none is scheduled.
 */
export async function cancelPendingUpdate(db: Kysely<Database>, apiClock: Clock, id: string): Promise<Subscription> {
  return transactionWithRetry(db, async (trx) => {
    const row = await lockSubscription(trx, id);
    if (row.pending_plan_id === null) throw new StateConflictError('subscription has no pending update');
    const clock = await clockFor(trx, { clock: apiClock }, row.test_clock_id);
    return updateSubscription(trx, clock, row, CLEARED, 'subscription.updated', previousOf(row, ['pending_update']));
  });
}

/** POST /api/invoices/preview's body: a subscription and, optionally, a change (SPEC §13). */
export interface PreviewRequest extends ChangeRequest {
  subscription_id: string;
}

/** True when `request` asks for a change (else the preview is the upcoming renewal). */
function asksForChange(request: ChangeRequest): boolean {
  return request.plan_id !== undefined || request.quantity !== undefined || request.billing_cycle_anchor === 'now';
}

/**
 * The invoice a change would produce, composed and never stored (POST /api/invoices/preview,
 * SPEC §13): the same facts and rules as changeSubscription at the customer's clock's time,
 * composed with the customer's credit balance now. `always_invoice` and a new period: the
 * invoice the change issues now (items already waiting included); `create_prorations`,
 * `none`, a trial's swap and a scheduled change: the renewal that follows, on the new plan,
 * with every item waiting. Without a change: the upcoming renewal (previewUpcomingInvoice).
 * `proration_date` in the answer is the instant prorated: the change given it gives these
 * lines. Throws 404 for an unknown subscription or plan, and the change's 400/409.
 */
export async function previewChange(
  db: Kysely<Database>,
  ctx: IssueContext,
  request: PreviewRequest,
): Promise<InvoicePreview> {
  const row = await readSubscription(db, request.subscription_id);
  if (!asksForChange(request)) return previewUpcomingInvoice(db, ctx, row);
  const clock = await clockFor(db, ctx, row.test_clock_id);
  const { to, decision } = await prepareChange(db, row, request, clock.now());
  const waiting = await waitingPendingItems<InvoiceLineDraft>(db, row.id);
  const currency = to.plan.currency;
  const common = { subscriptionId: row.id, customerId: row.customer_id, currency };
  const plan = (await findPlan(db, to.plan.id))!;
  if (decision.kind === 'new_period' || (decision.kind === 'same_period' && decision.behavior === 'always_invoice')) {
    const items = [...waiting.lines, ...decision.lines];
    if (decision.kind === 'same_period') {
      const shape = prorationInvoiceShape(row, decision.proration_date);
      return composePreview(db, ctx, {
        ...common,
        periodStart: shape.periodStart,
        periodEnd: shape.periodEnd,
        prorationDate: decision.proration_date,
        taxedBy: taxedBy(row, plan),
        input: (balance, taxes) =>
          oneOffInvoiceInput({
            reason: 'preview',
            customerId: row.customer_id,
            currency,
            items,
            balance,
            taxRates: taxes.tax_rates,
            taxExempt: taxes.tax_exempt,
          }),
      });
    }
    return composePreview(
      db,
      ctx,
      periodTarget(row, plan, to.quantity, decision.period, items, decision.proration_date),
    );
  }
  // The renewal after the change: as renewalTerms will see the row once the change is made.
  const after: SubscriptionRow =
    decision.kind === 'scheduled'
      ? {
          ...row,
          pending_plan_id: to.plan.id,
          pending_quantity: to.quantity,
          pending_effective_at: decision.effective_at,
        }
      : { ...row, plan_id: to.plan.id, quantity: to.quantity, ...CLEARED };
  const terms = await renewalTerms(db, after);
  const extra: InvoiceLineDraft[] =
    decision.kind === 'same_period' && decision.behavior === 'create_prorations' ? decision.lines : [];
  return composePreview(
    db,
    ctx,
    periodTarget(
      after,
      terms.plan,
      terms.quantity,
      terms.period,
      [...waiting.lines, ...extra],
      decision.kind === 'same_period' ? decision.proration_date : null,
    ),
  );
}

/** A subscription period's invoice to preview: `plan` × `quantity` for `period`, with `items`. */
function periodTarget(
  row: SubscriptionRow,
  plan: Parameters<typeof periodInvoiceInput>[0]['plan'] & Pick<PlanRow, 'tax_rate_ids'>,
  quantity: number,
  period: { start: Date; end: Date },
  items: readonly InvoiceLineDraft[],
  prorationDate: string | null,
): PreviewTarget {
  const periodStart = period.start.toISOString();
  const periodEnd = period.end.toISOString();
  return {
    subscriptionId: row.id,
    customerId: row.customer_id,
    currency: plan.currency,
    periodStart,
    periodEnd,
    prorationDate,
    taxedBy: taxedBy(row, plan),
    input: (balance, taxes) =>
      periodInvoiceInput({
        reason: 'preview',
        customerId: row.customer_id,
        subscriptionId: row.id,
        plan,
        periodStart,
        periodEnd,
        quantity,
        pendingItems: items,
        balance,
        taxRates: taxes.tax_rates,
        taxExempt: taxes.tax_exempt,
      }),
  };
}

async function readSubscription(db: Kysely<Database>, id: string): Promise<SubscriptionRow> {
  const row = isIdOf('subscription', id)
    ? await db.selectFrom('subscriptions').selectAll().where('id', '=', id).executeTakeFirst()
    : undefined;
  if (!row) throw new NotFoundError('subscription', id);
  return row;
}

/**
 * The upcoming invoice of `row` (SPEC §13 "preview" without a change): its next renewal as
 * renewSubscription will compose it now — a scheduled change applied (renewalTerms), the
 * items waiting included, the customer's credit balance now. A subscription with no period
 * yet (`paused` resumed, or its period invoiced ahead by a payment in advance) previews the
 * next period not invoiced yet, as issuing a payment in advance would.
 */
export async function previewUpcomingInvoice(
  db: Kysely<Database>,
  ctx: Pick<IssueContext, 'pipeline'>,
  row: SubscriptionRow,
): Promise<InvoicePreview> {
  const waiting = await waitingPendingItems<InvoiceLineDraft>(db, row.id);
  const terms = await renewalTerms(db, row);
  const invoicedAhead = await nextUninvoicedPeriod(db, row, terms.plan);
  // A period invoiced already (paid in advance) is not issued again: the next one is.
  const period =
    terms.appliesPendingUpdate || invoicedAhead.start.getTime() <= terms.period.start.getTime()
      ? terms.period
      : invoicedAhead;
  return composePreview(db, ctx, periodTarget(row, terms.plan, terms.quantity, period, waiting.lines, null));
}

/** The upcoming invoice of subscription `subscriptionId` (previewUpcomingInvoice). Throws 404 for an unknown one. */
export async function previewInvoice(db: Kysely<Database>, subscriptionId: string): Promise<InvoicePreview> {
  return previewUpcomingInvoice(db, {}, await readSubscription(db, subscriptionId));
}
