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
import { lockCustomer } from '../modules/customers/customers.service.ts';
import { findDiscount, toDiscount } from '../modules/coupons/coupons.discounts.ts';
import { checkAttachableTaxRates, parseTaxRateIds } from '../modules/tax-rates/tax-rates.service.ts';
import { isLive } from '../modules/subscriptions/subscriptions.status.ts';
import type { CustomerRow } from '../db/tables/customers.table.ts';
import type { ComposeDiscount } from './compose/types.ts';
import { checkDiscountRequest, offeredDiscount, redeemDiscount, removeDiscountOf } from './coupons.ts';
import { findPlan } from '../modules/plans/plans.service.ts';
import type { PlanRow } from '../db/tables/plans.table.ts';
import {
  lockSubscription,
  lockSubscriptionForChange,
  type PreviousAttributes,
  type Subscription,
  type SubscriptionChanges,
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
import {
  CANNOT_CHANGE,
  type ChangeDecision,
  type ChangePlan,
  type ChangeRequest,
  decideChange,
} from './plan-change-rules.ts';
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
import { closeUsageSpan, openUsageSpan } from './usage-billing.ts';
import { withDiscount } from './subscriptions.ts';
import type { SubscriptionDetail } from '../modules/subscriptions/subscriptions.schemas.ts';

export type { ChangeRequest };

/**
 * The terms PATCH /api/subscriptions/{id} and the preview accept besides a plan change (SPEC
 * §14, as Stripe's subscription update): a `coupon` or `promotion_code` replacing the
 * subscription's discount (`coupon` null or "" removes it) and `tax_rate_ids` replacing its
 * tax rates ([] clears them).
 */
export interface TermsRequest {
  coupon?: string | null;
  promotion_code?: string;
  tax_rate_ids?: string[];
}

/** PATCH /api/subscriptions/{id}'s body: a plan change, new terms, or both. */
export interface SubscriptionUpdate extends ChangeRequest, TermsRequest {}

const CHANGE_FIELDS = [
  'plan_id',
  'quantity',
  'proration_behavior',
  'proration_date',
  'billing_cycle_anchor',
  'effective',
] as const satisfies readonly (keyof ChangeRequest)[];

/** True when `request` names any field of a plan change (then the plan change rules run). */
function namesPlanChange(request: ChangeRequest): boolean {
  return CHANGE_FIELDS.some((field) => request[field] !== undefined);
}

/** True when `request` names new terms: a discount, its removal, or tax rates. */
function namesTerms(request: TermsRequest): boolean {
  return request.coupon !== undefined || request.promotion_code !== undefined || request.tax_rate_ids !== undefined;
}

/** True when `request` redeems a coupon or promotion code (not a removal). */
function redeemsDiscount(request: TermsRequest): boolean {
  return (
    (request.coupon !== undefined && request.coupon !== null && request.coupon !== '') ||
    request.promotion_code !== undefined
  );
}

/** Throws 400 when `request` both removes the discount and names a promotion code. */
function checkTermsShape(request: TermsRequest): void {
  if (request.coupon !== undefined && request.promotion_code !== undefined) {
    throw new ValidationError('give a coupon or a promotion_code, not both', 'promotion_code');
  }
}

/** What new terms write: the row's changes and the event's `previous_attributes`. */
interface AppliedTerms {
  changes: SubscriptionChanges;
  previous: PreviousAttributes;
}

/**
 * Applies `request`'s terms to locked subscription `row` in `trx` (SPEC §14): `tax_rate_ids`
 * checked as on create (each active, or attached already; 400) and returned as a change of
 * the row; the discount removed (`coupon` null or "": `customer.discount.deleted`) or
 * replaced by a redemption of `coupon` / `promotion_code` under the same limits as on create
 * (redeemDiscount: its 400s; `customer` is locked by the caller), checked against `plan` ×
 * `quantity` (applies_to_plans, minimum_amount). Returns the row's changes and the old values
 * (`tax_rate_ids`, `discount`) for `previous_attributes`.
 */
async function applyTerms(
  trx: Transaction<Database>,
  clock: Clock,
  row: SubscriptionRow,
  customer: CustomerRow | null,
  request: TermsRequest,
  target: { plan: ChangePlan; quantity: number },
): Promise<AppliedTerms> {
  const changes: SubscriptionChanges = {};
  const previous: PreviousAttributes = {};
  if (request.tax_rate_ids !== undefined) {
    const attached = parseTaxRateIds(row.tax_rate_ids);
    await checkAttachableTaxRates(trx, request.tax_rate_ids, 'tax_rate_ids', attached);
    changes.tax_rate_ids = JSON.stringify(request.tax_rate_ids);
    previous.tax_rate_ids = [...attached];
  }
  if (request.coupon !== undefined || request.promotion_code !== undefined) {
    const now = clock.now();
    const before = await findDiscount(trx, row.customer_id, row.id);
    previous.discount = before ? toDiscount(before.discount, before.coupon, now) : null;
    if (redeemsDiscount(request)) {
      await redeemDiscount(
        trx,
        clock,
        request.promotion_code !== undefined ? { promotion_code: request.promotion_code } : { coupon: request.coupon! },
        { customer: customer!, subscription: { id: row.id, plan: target.plan, quantity: target.quantity } },
      );
    } else {
      await removeDiscountOf(trx, clock, row.customer_id, row.id);
    }
  }
  return { changes, previous };
}

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

/** The fields of the subscription a plan change reports as they were. */
type PlanChangeKey = Exclude<keyof PreviousAttributes, 'discount' | 'tax_rate_ids'>;

/** The fields a change moves, as they were (the event's `previous_attributes`). */
function previousOf(row: SubscriptionRow, keys: readonly PlanChangeKey[]): PreviousAttributes {
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
 * subscription after with its discount, as GET /api/subscriptions/{id} shows it.
 */
export async function changeSubscription(
  db: Kysely<Database>,
  apiCtx: IssueContext,
  id: string,
  request: SubscriptionUpdate,
): Promise<SubscriptionDetail> {
  checkTermsShape(request);
  // The answer is GET's shape (its discount), read in the change's own transaction.
  return transactionWithRetry(db, async (trx) =>
    withDiscount(trx, apiCtx.clock, await changeLockedSubscription(trx, apiCtx, id, request)),
  );
}

/** changeSubscription's work in `trx`: the locks, the rules, the writes; returns the subscription after. */
async function changeLockedSubscription(
  trx: Transaction<Database>,
  apiCtx: IssueContext,
  id: string,
  request: SubscriptionUpdate,
): Promise<Subscription> {
  const terms = namesTerms(request);
  const planChange = !terms || namesPlanChange(request);
  // Lock order (db/locking.ts): the customer before the subscription when a discount is
  // redeemed (customers → subscriptions, customers → promotion_codes → coupons → discounts).
  const customer = redeemsDiscount(request)
    ? await lockCustomer(trx, (await readSubscription(trx, id)).customer_id)
    : null;
  const locked = await lockSubscriptionForChange(trx, id);
  const ctx = await withClockFor(trx, apiCtx, locked.test_clock_id);
  const { clock } = ctx;
  if (!planChange) {
    // New terms alone: no plan change rule runs; any subscription not ended takes them.
    if (!isLive(locked.status)) throw new StateConflictError(CANNOT_CHANGE);
    const plan = (await findPlan(trx, locked.plan_id))!;
    const applied = await applyTerms(trx, clock, locked, customer, request, { plan, quantity: locked.quantity });
    return updateSubscription(trx, clock, locked, applied.changes, 'subscription.updated', applied.previous);
  }
  const { from, to, decision } = await prepareChange(trx, locked, request, clock.now());
  // The discount is checked against what the subscription bills once the change is made
  // (a scheduled change: what it bills until then), and is in place before any invoice below.
  const applied = terms
    ? await applyTerms(trx, clock, locked, customer, request, decision.kind === 'scheduled' ? from : to)
    : { changes: {}, previous: {} };
  const row: SubscriptionRow = { ...locked, ...applied.changes };
  /** Writes `changes` and the terms' in one update, `previous_attributes` the plan change's `keys` and the terms'. */
  const update = (changes: SubscriptionChanges, keys: readonly PlanChangeKey[]) =>
    updateSubscription(trx, clock, locked, { ...changes, ...applied.changes }, 'subscription.updated', {
      ...previousOf(locked, keys),
      ...applied.previous,
    });
  if (decision.kind === 'scheduled') {
    // The terms apply now (`subscription.updated`); the plan change waits for the period end.
    const current = terms ? { ...row, updated_at: clock.now().toISOString() } : row;
    if (terms) await updateSubscription(trx, clock, locked, applied.changes, 'subscription.updated', applied.previous);
    return updateSubscription(
      trx,
      clock,
      current,
      { pending_plan_id: to.plan.id, pending_quantity: to.quantity, pending_effective_at: decision.effective_at },
      'subscription.update_scheduled',
      previousOf(locked, ['pending_update']),
    );
  }
  const swapped = { plan_id: to.plan.id, quantity: to.quantity, ...CLEARED };
  if (decision.kind === 'trial_swap') {
    return update(swapped, ['plan_id', 'quantity', 'pending_update']);
  }
  const charge = (await hasDefaultPaymentMethod(trx, row.customer_id)) ? clock.now().toISOString() : null;
  // The usage recorded so far is the old plan's (SPEC §15 "Plan changes"): its stretch of the
  // period closes here and bills at the old plan's charges — on the new period's invoice, or
  // on the renewal that ends this period.
  if (decision.kind === 'new_period' || from.plan.id !== to.plan.id) {
    await closeUsageSpan(trx, clock, locked, from.plan.id, decision.proration_date);
  }
  if (decision.kind === 'new_period') {
    const changes = {
      ...swapped,
      billing_cycle_anchor: decision.proration_date,
      current_period_start: decision.period.start.toISOString(),
      current_period_end: decision.period.end.toISOString(),
    };
    const subscription = await update(changes, [
      'plan_id',
      'quantity',
      'pending_update',
      'billing_cycle_anchor',
      'current_period_start',
      'current_period_end',
    ]);
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
  const subscription = await update(swapped, ['plan_id', 'quantity', 'pending_update']);
  if (decision.behavior === 'create_prorations') await addPendingItems(trx, clock, row, decision.lines);
  if (decision.behavior === 'always_invoice') {
    const waiting = await waitingPendingItems<InvoiceLineDraft>(trx, row.id);
    const invoice = await issueOneOffInvoice(trx, ctx, {
      ...prorationInvoiceShape(row, decision.proration_date),
      subscriptionId: row.id,
      taxedBy: taxedBy(row, (await findPlan(trx, to.plan.id))!),
      currency: to.plan.currency,
      testClockId: row.test_clock_id,
      items: [...waiting.lines, ...decision.lines],
      dueAt: clock.now().toISOString(),
      nextPaymentAttemptAt: charge,
    });
    await markPendingItemsInvoiced(trx, waiting.ids, invoice.id);
  }
  return subscription;
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

/** POST /api/invoices/preview's body: a subscription and, optionally, a change and new terms (SPEC §13, §14). */
export interface PreviewRequest extends SubscriptionUpdate {
  subscription_id: string;
}

/** True when `request` asks for a change (else the preview is the upcoming renewal). */
function asksForChange(request: ChangeRequest): boolean {
  return request.plan_id !== undefined || request.quantity !== undefined || request.billing_cycle_anchor === 'now';
}

/** A preview's view of new terms: the row with its new tax rates, and the subscription's discount to compose with. */
interface PreviewTerms {
  row: SubscriptionRow;
  /** undefined: the stored one; null: none (removed); else the discount a redemption would make. */
  subscriptionDiscount?: ComposeDiscount | null;
}

/**
 * `request`'s terms as a preview sees them (SPEC §14), checked as the PATCH checks them
 * (checkAttachableTaxRates; checkDiscountRequest against `target`) at `now`, reading only:
 * nothing is stored, no redemption counted. Throws their 400s.
 */
async function previewTerms(
  db: Kysely<Database>,
  row: SubscriptionRow,
  request: TermsRequest,
  target: { plan: ChangePlan; quantity: number },
  now: Date,
): Promise<PreviewTerms> {
  let viewed = row;
  if (request.tax_rate_ids !== undefined) {
    await checkAttachableTaxRates(db, request.tax_rate_ids, 'tax_rate_ids', parseTaxRateIds(row.tax_rate_ids));
    viewed = { ...row, tax_rate_ids: JSON.stringify(request.tax_rate_ids) };
  }
  if (request.coupon === undefined && request.promotion_code === undefined) return { row: viewed };
  if (!redeemsDiscount(request)) return { row: viewed, subscriptionDiscount: null };
  const customer = { id: row.customer_id, test_clock_id: row.test_clock_id };
  const offer = await checkDiscountRequest(
    db,
    request.promotion_code !== undefined ? { promotion_code: request.promotion_code } : { coupon: request.coupon! },
    { customer, subscription: { id: row.id, plan: target.plan, quantity: target.quantity } },
    now,
  );
  return { row: viewed, subscriptionDiscount: offeredDiscount(offer, now) };
}

/**
 * The invoice a change would produce, composed and never stored (POST /api/invoices/preview,
 * SPEC §13): the same facts and rules as changeSubscription at the customer's clock's time,
 * composed with the customer's credit balance now. `always_invoice` and a new period: the
 * invoice the change issues now (items already waiting included); `create_prorations`,
 * `none`, a trial's swap and a scheduled change: the renewal that follows, on the new plan,
 * with every item waiting. Without a change: the upcoming renewal (previewUpcomingInvoice).
 * New terms (`coupon`, `promotion_code`, `tax_rate_ids`, SPEC §14) are composed as the PATCH
 * would leave them — the discount a redemption would make, the tax rates given — checked
 * alike and never redeemed. `proration_date` in the answer is the instant prorated: the
 * change given it gives these lines. Throws 404 for an unknown subscription or plan, and the
 * change's and the terms' 400/409.
 */
export async function previewChange(
  db: Kysely<Database>,
  ctx: IssueContext,
  request: PreviewRequest,
): Promise<InvoicePreview> {
  checkTermsShape(request);
  const stored = await readSubscription(db, request.subscription_id);
  const clock = await clockFor(db, ctx, stored.test_clock_id);
  if (!asksForChange(request)) {
    const plan = (await findPlan(db, stored.plan_id))!;
    const terms = await previewTerms(db, stored, request, { plan, quantity: stored.quantity }, clock.now());
    return previewUpcomingInvoice(db, ctx, terms.row, terms.subscriptionDiscount);
  }
  const { from, to, decision } = await prepareChange(db, stored, request, clock.now());
  const terms = await previewTerms(db, stored, request, decision.kind === 'scheduled' ? from : to, clock.now());
  const row = terms.row;
  const { subscriptionDiscount } = terms;
  const waiting = await waitingPendingItems<InvoiceLineDraft>(db, row.id);
  const currency = to.plan.currency;
  const common = { subscriptionId: row.id, customerId: row.customer_id, currency };
  const plan = (await findPlan(db, to.plan.id))!;
  // The stretch the change would close at its instant, as changeSubscription closes it (SPEC §15):
  // the usage recorded so far bills at the old plan's charges.
  const closingSpan =
    decision.kind === 'new_period' || (decision.kind === 'same_period' && from.plan.id !== to.plan.id)
      ? await openUsageSpan(db, stored, from.plan.id, decision.proration_date)
      : null;
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
    return composePreview(db, ctx, {
      ...periodTarget(row, plan, to.quantity, decision.period, items, decision.proration_date),
      subscriptionDiscount,
      closingSpan,
    });
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
  const renewal = await renewalTerms(db, after);
  const extra: InvoiceLineDraft[] =
    decision.kind === 'same_period' && decision.behavior === 'create_prorations' ? decision.lines : [];
  return composePreview(db, ctx, {
    ...periodTarget(
      after,
      renewal.plan,
      renewal.quantity,
      renewal.period,
      [...waiting.lines, ...extra],
      decision.kind === 'same_period' ? decision.proration_date : null,
    ),
    subscriptionDiscount,
    closingSpan,
    // The period ending bills at the plan in force at its end (a change scheduled for it not applied yet, SPEC §15).
    usagePlanId: renewal.usagePlan.id,
  });
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
 * next period not invoiced yet, as issuing a payment in advance would. `subscriptionDiscount`:
 * a preview's discount of the subscription instead of the stored one (null: none).
 */
export async function previewUpcomingInvoice(
  db: Kysely<Database>,
  ctx: Pick<IssueContext, 'pipeline'>,
  row: SubscriptionRow,
  subscriptionDiscount?: ComposeDiscount | null,
): Promise<InvoicePreview> {
  const waiting = await waitingPendingItems<InvoiceLineDraft>(db, row.id);
  const terms = await renewalTerms(db, row);
  const invoicedAhead = await nextUninvoicedPeriod(db, row, terms.plan);
  // A period invoiced already (paid in advance) is not issued again: the next one is.
  const period =
    terms.appliesPendingUpdate || invoicedAhead.start.getTime() <= terms.period.start.getTime()
      ? terms.period
      : invoicedAhead;
  return composePreview(db, ctx, {
    ...periodTarget(row, terms.plan, terms.quantity, period, waiting.lines, null),
    subscriptionDiscount,
    // The period ending bills its usage at its own plan's charges, a scheduled change's or not.
    usagePlanId: row.plan_id,
  });
}

/** The upcoming invoice of subscription `subscriptionId` (previewUpcomingInvoice). Throws 404 for an unknown one. */
export async function previewInvoice(db: Kysely<Database>, subscriptionId: string): Promise<InvoicePreview> {
  return previewUpcomingInvoice(db, {}, await readSubscription(db, subscriptionId));
}
