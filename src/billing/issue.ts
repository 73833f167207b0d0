// Issuing invoices (SPEC §9 "When invoices are created", §12): the ONLY way an invoice comes
// to exist. Each kind — a subscription's first period, a renewal, the next period paid in
// advance, a plan change's new period or its invoice of prorations (SPEC §13), a one-off —
// builds the pipeline's input from the records, composes it
// (billing/compose) with the customer's credit balance, and hands the result to the
// invoices record (issueInvoice). composePreview composes the same way and stores nothing.
// Credit applied to an invoice leaves the balance in the same transaction (applied_to_invoice);
// a period's invoice and a plan change's invoice of prorations take its subscription's and
// customer's discounts (billing/coupons.ts), and a `once` discount it took ends with it. A
// one-off invoice (no subscription) takes no discount.
import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../db/database.ts';
import { isPostgres } from '../db/column-types.ts';
import type { PlanRow } from '../db/tables/plans.table.ts';
import type { SubscriptionRow } from '../db/tables/subscriptions.table.ts';
import {
  customerBalance,
  lockCustomerBalances,
  recordBalanceTransaction,
} from '../modules/balances/balances.ledger.ts';
import {
  finalizeInvoice,
  type Invoice,
  type InvoiceContext,
  type InvoiceDraft,
  issueInvoice,
  issueInvoices,
  lockInvoice,
  updateInvoice,
} from '../modules/invoices/invoices.lifecycle.ts';
import { nextPeriodOnAnchor, type Period } from '../modules/subscriptions/subscriptions.billing-period.ts';
import { BILLING_REASON_OF } from './billing-reasons.ts';
import { endUsedOnceDiscounts, invoiceDiscounts, type InvoiceDiscounts } from './coupons.ts';
import { oneOffInvoiceInput, periodInvoiceInput } from './compose/input.ts';
import { composeInvoice, PIPELINE } from './compose/pipeline.ts';
import type { ComposeDiscount, ComposedInvoice, ComposeInput, ComposeStep, InvoiceLineDraft } from './compose/types.ts';
import type { Config } from '../config.ts';
import { invoiceTaxes, type InvoiceTaxes, type TaxedParty } from './taxation.ts';
import { closeUsageSpan, type FreshSpan, invoiceUsage, recordBilledUsage, type UsageBill } from './usage-billing.ts';
import { parseCharges } from '../modules/plans/plans.charges.ts';
import { hasDefaultPaymentMethod } from '../modules/payment-methods/payment-methods.ts';
import { findPlan } from '../modules/plans/plans.service.ts';

/**
 * What issuing needs: the invoice record's context (INVOICE_FINALIZE_DELAY for renewals'
 * drafts among its settings), and the pipeline to compose with (default PIPELINE). Deps fits;
 * `pipeline` exists for tests, which add a step the production pipeline does not have yet (a
 * usage line) to a copy of their deps: every caller passes its context on whole.
 */
export interface IssueContext extends InvoiceContext {
  config: InvoiceContext['config'] & Partial<Pick<Config, 'defaultTaxRateIds'>>;
  pipeline?: readonly ComposeStep[];
}

/** The line kinds that make a renewal invoice a draft (SPEC §12 "Drafts"): late usage may still come. */
const DRAFT_KINDS: ReadonlySet<InvoiceLineDraft['kind']> = new Set(['usage', 'proration']);

/** The subscription an invoice bills: its id, customer, the customer's test clock, its anchor. */
export type BilledSubscription = Pick<
  SubscriptionRow,
  'id' | 'customer_id' | 'test_clock_id' | 'billing_cycle_anchor' | 'current_period_end' | 'quantity' | 'tax_rate_ids'
>;

/** An invoice issued, or found issued already for that (subscription, period). */
export interface IssuedInvoice {
  invoice: Invoice;
  /** False: the period's invoice existed; nothing was written. */
  created: boolean;
}

/**
 * The credit balance of `customerId` in `currency` that an invoice issued in `trx` may take
 * (minor units, ≥ 0). A zero balance is read without a lock (nothing can be spent twice);
 * otherwise the balance is locked (lockCustomerBalances) and read again under the lock, so
 * two invoices issued at once never both take the same credit.
 */
async function spendableBalance(trx: Transaction<Database>, customerId: string, currency: string): Promise<number> {
  const seen = await customerBalance(trx, customerId, currency);
  if (seen <= 0 || !isPostgres(trx)) return Math.max(seen, 0);
  await lockCustomerBalances(trx, [customerId]);
  return Math.max(await customerBalance(trx, customerId, currency), 0);
}

/** What a period's invoice is issued for: why, when it is due, when the saved method is charged. */
interface PeriodIssue {
  reason: 'first_period' | 'renewal' | 'subscription_update';
  period: Period;
  /** ISO 8601. */
  dueAt: string;
  /** When the worker charges the customer's saved method (SPEC §10); null: it does not. */
  nextPaymentAttemptAt: string | null;
  /** A renewal issued by the worker: it may be a draft (SPEC §12 "Drafts"). */
  mayDraft?: boolean;
  /** Proration items waiting for this invoice (SPEC §13); default none. */
  pendingItems?: readonly InvoiceLineDraft[];
  /** It bills usage in arrears (SPEC §15): a renewal, or a plan change's new period (the stretch the change closed). */
  billsUsage?: boolean;
  /** The plan in force at the end of the period just ended, whose charges price its usage; default `plan`. */
  usagePlan?: PlanRow;
}

/**
 * When the renewal invoice of `content`, for a period starting at `periodStart`, is finalized
 * (SPEC §12 "Drafts"): null — final at once — unless it has a usage or proration line and
 * owes something; otherwise `periodStart` + INVOICE_FINALIZE_DELAY (ISO 8601; the period start
 * is in the customer's clock's time, so a test clock finalizes it at its own time).
 */
function finalizationTime(ctx: IssueContext, content: ComposedInvoice, periodStart: Date): string | null {
  // Nothing owed: issued paid at once, moving its subscription as a paid renewal does.
  if (content.amount_due === 0 || !content.lines.some((line) => DRAFT_KINDS.has(line.kind))) return null;
  return new Date(periodStart.getTime() + ctx.config.invoiceFinalizeDelayMs).toISOString();
}

/** What a period's invoice is composed with besides its subscription and plan: read by the caller. */
interface PeriodFacts {
  /** The credit it may take (spendableBalance), minor units ≥ 0. */
  balance: number;
  discounts: InvoiceDiscounts;
  taxes: InvoiceTaxes;
  usage: UsageBill;
}

/**
 * The content of the invoice of `issue` for `subscription` on `plan` (the pipeline, pure),
 * when it is finalized (null: final at once) and the draft issueInvoice stores.
 */
function composePeriodInvoice(
  ctx: IssueContext,
  subscription: BilledSubscription,
  plan: PlanRow,
  issue: PeriodIssue,
  facts: PeriodFacts,
): { content: ComposedInvoice; finalizesAt: string | null; draft: InvoiceDraft } {
  const start = issue.period.start.toISOString();
  const end = issue.period.end.toISOString();
  const content = composeInvoice(
    periodInvoiceInput({
      reason: issue.reason,
      customerId: subscription.customer_id,
      subscriptionId: subscription.id,
      plan,
      periodStart: start,
      periodEnd: end,
      quantity: subscription.quantity,
      pendingItems: issue.pendingItems,
      balance: facts.balance,
      discounts: facts.discounts.compose,
      taxRates: facts.taxes.tax_rates,
      taxExempt: facts.taxes.tax_exempt,
      usage: facts.usage.items,
    }),
    ctx.pipeline ?? PIPELINE,
  );
  const finalizesAt = issue.mayDraft ? finalizationTime(ctx, content, issue.period.start) : null;
  const draft: InvoiceDraft = {
    customerId: subscription.customer_id,
    testClockId: subscription.test_clock_id,
    subscriptionId: subscription.id,
    billingReason: BILLING_REASON_OF[issue.reason],
    currency: plan.currency,
    periodStart: start,
    periodEnd: end,
    nextPaymentAttemptAt: issue.nextPaymentAttemptAt,
    // A draft's due time is its finalization: nothing can be paid on it before.
    dueAt: finalizesAt === null ? issue.dueAt : finalizesAt,
    finalizesAt,
    content,
  };
  return { content, finalizesAt, draft };
}

/**
 * Issues (exactly once) the invoice of one period of `subscription` on `plan`: composed with
 * the customer's credit balance in the plan's currency, stored `open` (or `paid` at once when
 * the credit or a free plan leaves nothing due), and the credit it took recorded as an
 * `applied_to_invoice` transaction. An invoice of that period that exists already is
 * returned as it is (issueInvoice writes nothing then, and no credit is taken) — except that
 * an open one not yet scheduled for a charge is scheduled when `nextPaymentAttemptAt` is
 * given (a period partly paid in advance, reached by its renewal). The caller holds the
 * subscription's lock.
 */
async function issuePeriodInvoice(
  trx: Transaction<Database>,
  ctx: IssueContext,
  subscription: BilledSubscription,
  plan: PlanRow,
  issue: PeriodIssue,
): Promise<IssuedInvoice> {
  const start = issue.period.start.toISOString();
  const end = issue.period.end.toISOString();
  const balance = await spendableBalance(trx, subscription.customer_id, plan.currency);
  const discounts = await invoiceDiscounts(trx, subscription.id, subscription.customer_id);
  const taxes = await invoiceTaxes(trx, taxedBy(subscription, plan), ctx.config.defaultTaxRateIds ?? []);
  // Usage is billed in arrears by the renewal that ends its period (SPEC §15), and the
  // stretch a plan change closed by the change's new period; never by an invoice paid in advance.
  const usage = issue.billsUsage
    ? await invoiceUsage(trx, subscription, issue.usagePlan ?? plan, start)
    : { items: [], spans: [] };
  const { content, finalizesAt, draft } = composePeriodInvoice(ctx, subscription, plan, issue, {
    balance,
    discounts,
    taxes,
    usage,
  });
  const issued = await issueInvoice(trx, ctx, draft);
  if (issued.created) {
    await recordBilledUsage(trx, ctx.clock, subscription.id, issued.invoice.id, usage);
    await takeAppliedCredit(trx, ctx, issued.invoice, subscription.test_clock_id);
    await creditNegativeTotal(trx, ctx, issued.invoice, subscription.test_clock_id);
    await endUsedOnceDiscounts(trx, discounts, content, end);
    if (finalizesAt === null || Date.parse(finalizesAt) > ctx.clock.now().getTime()) return issued;
    // INVOICE_FINALIZE_DELAY=0 (or a renewal run late): finalized in the same transaction.
    const row = await lockInvoice(trx, issued.invoice.id);
    return {
      invoice: await finalizeInvoice(trx, ctx, row, { next_payment_attempt_at: issue.nextPaymentAttemptAt }),
      created: true,
    };
  }
  // The period was invoiced already (paid in advance, wholly or in part): nothing was written
  // to it, but the period just ended is closed: its usage is billed once, on its own invoice.
  const { invoice } = issued;
  if (issue.billsUsage) {
    await issueUsageInvoice(trx, ctx, subscription, plan, issue, usage, invoice.id);
  }
  if (issue.nextPaymentAttemptAt === null || invoice.status !== 'open' || invoice.next_payment_attempt_at !== null) {
    return issued;
  }
  const row = await lockInvoice(trx, invoice.id);
  if (row.charges_stopped_at !== null) return issued;
  return {
    invoice: await updateInvoice(trx, ctx, row, { next_payment_attempt_at: issue.nextPaymentAttemptAt }),
    created: false,
  };
}

/**
 * Bills `usage` — what the renewal for `issue.period` found to bill of the period just ended,
 * when that period's successor was invoiced already by a payment in advance (SPEC §15 "Paid in
 * advance") — on an invoice of its own: usage lines and late adjustments only, the
 * subscription's and customer's discounts but `once` ones (their invoice is the period's), its
 * taxes, the customer's credit; a `usage` invoice of the subscription (collected and dunned as
 * a renewal; not its period's invoice, which exists), the span of the usage it bills, a draft until INVOICE_FINALIZE_DELAY as a renewal with usage, charged once final.
 * When the usage bills no line (none, or all under free units) no invoice is issued and the
 * record names `periodInvoiceId`, the invoice the renewal found: late events still bill
 * against it. Usage is recorded billed in the same transaction, so it is billed exactly once.
 */
async function issueUsageInvoice(
  trx: Transaction<Database>,
  ctx: IssueContext,
  subscription: BilledSubscription,
  plan: PlanRow,
  issue: PeriodIssue,
  usage: UsageBill,
  periodInvoiceId: string,
): Promise<void> {
  await issueUsageOnly(trx, ctx, subscription, plan, usage, {
    periodEnd: issue.period.start.toISOString(),
    finalizesAfter: issue.period.start,
    nextPaymentAttemptAt: issue.nextPaymentAttemptAt,
    dueAt: issue.dueAt,
    emptyBilledOn: periodInvoiceId,
  });
}

/** Where and when a usage-only invoice bills (issueUsageOnly). */
interface UsageOnlyIssue {
  /** The end of the usage it bills (ISO 8601): its `period_end`. */
  periodEnd: string;
  /** A draft until this + INVOICE_FINALIZE_DELAY (a renewal's usage invoice); null: final at once. */
  finalizesAfter: Date | null;
  nextPaymentAttemptAt: string | null;
  dueAt: string;
  /** The invoice usage that bills no line is recorded against (late events bill against it); null: not recorded. */
  emptyBilledOn: string | null;
}

/**
 * A `usage` invoice of `subscription` billing `usage` alone (issueUsageInvoice,
 * issueFinalUsageInvoice): the subscription's and customer's discounts but `once` ones, its
 * taxes, the customer's credit; usage recorded billed in the same transaction. Returns the
 * invoice, or null when nothing bills a line (then nothing is issued).
 */
async function issueUsageOnly(
  trx: Transaction<Database>,
  ctx: IssueContext,
  subscription: BilledSubscription,
  plan: PlanRow,
  usage: UsageBill,
  target: UsageOnlyIssue,
): Promise<Invoice | null> {
  if (usage.items.length === 0 && usage.spans.length === 0) return null;
  const balance = await spendableBalance(trx, subscription.customer_id, plan.currency);
  const discounts = await invoiceDiscounts(trx, subscription.id, subscription.customer_id);
  const onceIds = new Set(discounts.once.map(({ discount }) => discount.id));
  const taxes = await invoiceTaxes(trx, taxedBy(subscription, plan), ctx.config.defaultTaxRateIds ?? []);
  const content = composeInvoice(
    {
      reason: 'renewal',
      currency: plan.currency,
      customer: { id: subscription.customer_id, balance, tax_exempt: taxes.tax_exempt },
      subscription: null,
      pending_items: [],
      usage: usage.items,
      discounts: discounts.compose.filter((discount) => !onceIds.has(discount.id)),
      tax_rates: taxes.tax_rates,
    },
    ctx.pipeline ?? PIPELINE,
  );
  if (content.lines.length === 0) {
    if (target.emptyBilledOn !== null) {
      await recordBilledUsage(trx, ctx.clock, subscription.id, target.emptyBilledOn, usage);
    }
    return null;
  }
  const spanStart = Math.min(...usage.items.map((item) => Date.parse(item.period_start)));
  const finalizesAt = target.finalizesAfter === null ? null : finalizationTime(ctx, content, target.finalizesAfter);
  const { invoice } = await issueInvoice(trx, ctx, {
    customerId: subscription.customer_id,
    testClockId: subscription.test_clock_id,
    subscriptionId: subscription.id,
    kind: 'usage',
    billingReason: BILLING_REASON_OF.renewal,
    currency: plan.currency,
    periodStart: new Date(spanStart).toISOString(),
    periodEnd: target.periodEnd,
    nextPaymentAttemptAt: target.nextPaymentAttemptAt,
    dueAt: finalizesAt ?? target.dueAt,
    finalizesAt,
    content,
  });
  await recordBilledUsage(trx, ctx.clock, subscription.id, invoice.id, usage);
  await takeAppliedCredit(trx, ctx, invoice, subscription.test_clock_id);
  await creditNegativeTotal(trx, ctx, invoice, subscription.test_clock_id);
  if (finalizesAt !== null && Date.parse(finalizesAt) <= ctx.clock.now().getTime()) {
    return finalizeInvoice(trx, ctx, await lockInvoice(trx, invoice.id), {
      next_payment_attempt_at: target.nextPaymentAttemptAt,
    });
  }
  return invoice;
}

/**
 * The final invoice of a subscription that ends at `endAt` (ISO 8601): cancelled now, or at
 * its period end by the worker (SPEC §15 "Cancelling"). Its usage not billed yet — the
 * current period's up to `endAt` at the plan's charges, stretches closed by plan changes, usage
 * given back by the drafts its cancel voided (releaseBilledUsage), late adjustments — is billed
 * at once on a `usage` invoice: final (`open`, no draft: nothing follows it), due now and
 * charged now when the customer has a saved method, or paid at once by credit. Returns it, or
 * null when nothing bills a line (a plan without charges issues nothing). The caller holds the
 * subscription's lock, in the cancel's transaction, before or after the transition. Throws
 * MeterMissingError when a charged meter is gone.
 */
export async function issueFinalUsageInvoice(
  trx: Transaction<Database>,
  ctx: IssueContext,
  subscription: SubscriptionRow,
  endAt: string,
): Promise<Invoice | null> {
  const plan = await findPlan(trx, subscription.plan_id);
  if (plan === undefined) return null;
  if (parseCharges(plan.charges).length > 0) {
    await closeUsageSpan(trx, ctx.clock, subscription, plan.id, endAt);
  }
  const usage = await invoiceUsage(trx, subscription, plan, endAt);
  if (usage.items.length === 0) return null;
  const now = ctx.clock.now().toISOString();
  const charge = await hasDefaultPaymentMethod(trx, subscription.customer_id);
  return issueUsageOnly(trx, ctx, subscription, plan, usage, {
    periodEnd: endAt,
    finalizesAfter: null,
    nextPaymentAttemptAt: charge ? now : null,
    dueAt: now,
    emptyBilledOn: null,
  });
}

/** Whose tax rates a period's invoice applies (SPEC §14): its subscription's, its plan's, its customer's. */
export function taxedBy(
  subscription: Pick<SubscriptionRow, 'customer_id' | 'tax_rate_ids'>,
  plan: Pick<PlanRow, 'tax_rate_ids'>,
): TaxedParty {
  return {
    customerId: subscription.customer_id,
    subscriptionTaxRateIds: subscription.tax_rate_ids,
    planTaxRateIds: plan.tax_rate_ids,
  };
}

/** Records the credit `invoice` took (`applied_balance`) as leaving the customer's balance. */
async function takeAppliedCredit(
  trx: Transaction<Database>,
  ctx: InvoiceContext,
  invoice: Invoice,
  testClockId: string | null,
): Promise<void> {
  if (invoice.applied_balance === 0) return;
  await recordBalanceTransaction(trx, ctx.clock, {
    customerId: invoice.customer_id,
    testClockId,
    currency: invoice.currency,
    amount: -invoice.applied_balance,
    kind: 'applied_to_invoice',
    invoiceId: invoice.id,
  });
}

/**
 * Gives the customer the credit of an invoice whose total is negative (SPEC §13: a downgrade's
 * or an interval change's unused time worth more than what it bills): `−total` minor units
 * join the credit balance as a `credit_note` naming the invoice, which owes 0. Never a refund.
 */
async function creditNegativeTotal(
  trx: Transaction<Database>,
  ctx: InvoiceContext,
  invoice: Invoice,
  testClockId: string | null,
): Promise<void> {
  if (invoice.total >= 0) return;
  await recordBalanceTransaction(trx, ctx.clock, {
    customerId: invoice.customer_id,
    testClockId,
    currency: invoice.currency,
    amount: -invoice.total,
    kind: 'credit_note',
    invoiceId: invoice.id,
  });
}

/**
 * The first invoice of `subscription` (SPEC §9): its first period `period` on the anchor,
 * due at its start (`invoice.created`) — the invoice the first payment settles. Exactly
 * once. The caller holds the subscription (or its customer's) lock.
 */
export async function issueFirstPeriodInvoice(
  trx: Transaction<Database>,
  ctx: IssueContext,
  subscription: BilledSubscription,
  plan: PlanRow,
  period: Period,
): Promise<IssuedInvoice> {
  const dueAt = period.start.toISOString();
  return issuePeriodInvoice(trx, ctx, subscription, plan, {
    reason: 'first_period',
    period,
    dueAt,
    nextPaymentAttemptAt: null,
  });
}

/**
 * The renewal invoice of `subscription` for `period` (SPEC §9: a trial's end too), due at the
 * period's start; charged at `nextPaymentAttemptAt` when given (the customer has a saved
 * method, SPEC §10). One with a usage or proration line that owes something is issued `draft`
 * instead (SPEC §12 "Drafts"): unnumbered, due and finalized at the period's start +
 * INVOICE_FINALIZE_DELAY (at once when that has passed already, e.g. a delay of 0), charged
 * only once finalized (billing/finalize.ts). When the period was invoiced already (paid in
 * advance) that invoice is returned, `created: false`. The caller holds the subscription's lock.
 */
export async function issueRenewalInvoice(
  trx: Transaction<Database>,
  ctx: IssueContext,
  subscription: BilledSubscription,
  plan: PlanRow,
  period: Period,
  nextPaymentAttemptAt: string | null,
  pendingItems: readonly InvoiceLineDraft[] = [],
  usagePlan: PlanRow = plan,
): Promise<IssuedInvoice> {
  return issuePeriodInvoice(trx, ctx, subscription, plan, {
    reason: 'renewal',
    period,
    dueAt: period.start.toISOString(),
    nextPaymentAttemptAt,
    mayDraft: true,
    pendingItems,
    billsUsage: true,
    usagePlan,
  });
}

/** One renewal of a batch, with what its invoice is composed from, read in bulk by the caller. */
export interface PlainRenewal {
  subscription: BilledSubscription;
  plan: PlanRow;
  period: Period;
  /** As issueRenewalInvoice's. */
  nextPaymentAttemptAt: string | null;
  discounts: InvoiceDiscounts;
  taxes: InvoiceTaxes;
}

/**
 * The invoice issueRenewalInvoice would issue for `renewal` — a subscription whose customer
 * has no credit in the plan's currency, with no items waiting, no usage to bill (its plan
 * has no charges, nothing of a past plan is left to bill) and no invoice of the period yet —
 * composed the same way (the same pipeline), as the draft to issue. Null when issuing it
 * would write more than the invoice and its events (a `once` discount to end, a draft to
 * finalize later, an invoice paid at once, credit from a negative total): such a renewal
 * goes through issueRenewalInvoice. Pure.
 */
export function plainRenewalDraft(ctx: IssueContext, renewal: PlainRenewal): InvoiceDraft | null {
  if (renewal.discounts.once.length > 0) return null;
  const { content, finalizesAt, draft } = composePeriodInvoice(
    ctx,
    renewal.subscription,
    renewal.plan,
    {
      reason: 'renewal',
      period: renewal.period,
      dueAt: renewal.period.start.toISOString(),
      nextPaymentAttemptAt: renewal.nextPaymentAttemptAt,
      mayDraft: true,
    },
    { balance: 0, discounts: renewal.discounts, taxes: renewal.taxes, usage: { items: [], spans: [] } },
  );
  if (finalizesAt !== null || content.amount_due === 0 || content.total < 0) return null;
  return draft;
}

/**
 * Issues the drafts plainRenewalDraft made, in a handful of statements (issueInvoices): the
 * caller holds the subscriptions' locks and knows their periods have no invoice yet.
 */
export async function issuePlainRenewalInvoices(
  trx: Transaction<Database>,
  ctx: IssueContext,
  drafts: readonly InvoiceDraft[],
): Promise<Invoice[]> {
  return issueInvoices(trx, ctx, drafts);
}

/**
 * The invoice of the new period a plan change starts now (SPEC §13: an interval change, or
 * `billing_cycle_anchor: now`): `subscription` (its new quantity) on its new `plan` for
 * `period`, with `pendingItems` (the old plan's unused time among them), due at once and
 * charged at `nextPaymentAttemptAt` when given — final at once, collected like a renewal. A
 * negative total becomes credit (creditNegativeTotal). `created: false` when that period was
 * invoiced already (the caller refuses such a change). The caller holds the subscription's lock.
 */
export async function issueChangePeriodInvoice(
  trx: Transaction<Database>,
  ctx: IssueContext,
  subscription: BilledSubscription,
  plan: PlanRow,
  period: Period,
  nextPaymentAttemptAt: string | null,
  pendingItems: readonly InvoiceLineDraft[],
): Promise<IssuedInvoice> {
  return issuePeriodInvoice(trx, ctx, subscription, plan, {
    reason: 'subscription_update',
    period,
    dueAt: period.start.toISOString(),
    nextPaymentAttemptAt,
    pendingItems,
    billsUsage: true,
  });
}

/**
 * The next period of `subscription` that has no invoice yet (SPEC §12 "paying in advance"):
 * the one after the later of its current period's end and the end of its last invoiced
 * period, on its billing cycle anchor. A subscription with no period yet starts at its anchor.
 */
export async function nextUninvoicedPeriod(
  db: Kysely<Database> | Transaction<Database>,
  subscription: BilledSubscription,
  plan: Pick<PlanRow, 'interval' | 'interval_count'>,
): Promise<Period> {
  const last = await db
    .selectFrom('invoices')
    .select((eb) => eb.fn.max('period_end').as('end'))
    .where('subscription_id', '=', subscription.id)
    .where('kind', '=', 'period')
    .executeTakeFirst();
  const ends = [last?.end, subscription.current_period_end]
    .filter((end): end is string => typeof end === 'string')
    .map((end) => new Date(end).getTime());
  const anchor = new Date(subscription.billing_cycle_anchor);
  const after = ends.length === 0 ? anchor : new Date(Math.max(...ends));
  return nextPeriodOnAnchor({ anchor, after, interval: plan.interval, intervalCount: plan.interval_count });
}

/**
 * The invoice of the next period not invoiced yet (nextUninvoicedPeriod), issued for a
 * payment that found nothing to pay (SPEC §12: a payment never buys a period by itself; it
 * issues the next period's invoice and settles it). Due at the period's start: what the
 * payment does not cover is owed when the period begins. The caller holds the subscription's
 * lock and settles the invoice (settle.ts).
 */
export async function issueAdvanceInvoice(
  trx: Transaction<Database>,
  ctx: IssueContext,
  subscription: BilledSubscription,
  plan: PlanRow,
): Promise<IssuedInvoice> {
  const period = await nextUninvoicedPeriod(trx, subscription, plan);
  return issuePeriodInvoice(trx, ctx, subscription, plan, {
    reason: 'renewal',
    period,
    dueAt: period.start.toISOString(),
    nextPaymentAttemptAt: null,
  });
}

/** A one-off invoice: lines that belong to no subscription period. */
export interface OneOffInvoiceInput {
  customerId: string;
  /** The customer's test clock (SPEC §11); null: real time. */
  testClockId: string | null;
  /** ISO 4217, upper case: every item's currency. */
  currency: string;
  /** Pending items to bill (`kind: proration` until other kinds are allowed by the pipeline), rounded already. */
  items: readonly InvoiceLineDraft[];
  /** The span the invoice covers (ISO 8601) and when it is due. */
  periodStart: string;
  periodEnd: string;
  dueAt: string;
  metadata?: Record<string, string>;
  /**
   * The subscription whose plan change these prorations are (SPEC §13 `always_invoice`, reason
   * `subscription_update`): the invoice belongs to it (kind `proration`) — charged, made
   * `past_due` and dunned as its renewal would be — and takes its and its customer's discounts
   * (SPEC §14). Absent: a one-off invoice (reason `one_off`), no subscription, no discount.
   */
  subscriptionId?: string;
  /** When the worker charges the customer's saved method (SPEC §10); default null: it does not. */
  nextPaymentAttemptAt?: string | null;
  /**
   * The `tax_rate_ids` (JSON text) of the subscription and plan the items belong to (a plan
   * change's prorations, SPEC §13), which come before the customer's in the precedence (§14).
   */
  taxedBy?: { subscriptionTaxRateIds?: string; planTaxRateIds?: string };
}

/**
 * Issues a one-off invoice (SPEC §12: reason `one_off`; no subscription fee, no subscription)
 * — or, given `input.subscriptionId`, a plan change's invoice of prorations (SPEC §13: reason
 * `subscription_update`, kind `proration`, discounted as the subscription's invoices are) — for `input.items`, composed with the customer's credit balance in `input.currency` and
 * taking that credit (`applied_to_invoice`). Every call issues a new invoice: callers that
 * may retry make it idempotent themselves. A negative total owes 0 and becomes the customer's
 * credit (`credit_note`, SPEC §13), never a refund. The caller holds the customer's (or, for a
 * plan change's invoice, the subscription's) lock. Taxed by `input.taxedBy`'s subscription or
 * plan rates, else the customer's, else DEFAULT_TAX_RATE_IDS (SPEC §14). Throws ComposeInputError for items the
 * pipeline refuses (another currency, not a proration) and AmountOutOfRangeError (400)
 * beyond Number.MAX_SAFE_INTEGER.
 */
export async function issueOneOffInvoice(
  trx: Transaction<Database>,
  ctx: IssueContext,
  input: OneOffInvoiceInput,
): Promise<Invoice> {
  const balance = await spendableBalance(trx, input.customerId, input.currency);
  const party = { customerId: input.customerId, ...input.taxedBy };
  const taxes = await invoiceTaxes(trx, party, ctx.config.defaultTaxRateIds ?? []);
  const subscriptionId = input.subscriptionId ?? null;
  const discounts = subscriptionId === null ? null : await invoiceDiscounts(trx, subscriptionId, input.customerId);
  const reason = subscriptionId === null ? 'one_off' : 'subscription_update';
  const content = composeInvoice(
    oneOffInvoiceInput({
      reason,
      customerId: input.customerId,
      currency: input.currency,
      items: input.items,
      balance,
      discounts: discounts?.compose,
      taxRates: taxes.tax_rates,
      taxExempt: taxes.tax_exempt,
    }),
    ctx.pipeline ?? PIPELINE,
  );
  const { invoice } = await issueInvoice(trx, ctx, {
    customerId: input.customerId,
    testClockId: input.testClockId,
    subscriptionId,
    kind: 'proration',
    billingReason: BILLING_REASON_OF[reason],
    currency: input.currency,
    periodStart: input.periodStart,
    periodEnd: input.periodEnd,
    dueAt: input.dueAt,
    content,
    metadata: input.metadata,
    nextPaymentAttemptAt: input.nextPaymentAttemptAt ?? null,
  });
  await takeAppliedCredit(trx, ctx, invoice, input.testClockId);
  await creditNegativeTotal(trx, ctx, invoice, input.testClockId);
  // A `once` discount it took ends at the period end: the renewal after it does not take it again.
  if (discounts !== null) await endUsedOnceDiscounts(trx, discounts, content, input.periodEnd);
  return invoice;
}

/** An invoice as it would be issued: composed, never stored (no id, no number). */
export interface InvoicePreview extends ComposedInvoice {
  customer_id: string;
  subscription_id: string;
  /** Stripe's reason for an invoice not issued yet (SPEC §9 "Billing reason"). */
  billing_reason: 'upcoming';
  currency: string;
  /** ISO 8601: the period the invoice covers. */
  period_start: string;
  period_end: string;
  /** ISO 8601: the instant a change is prorated at (pass it to the change to get these lines); null without proration. */
  proration_date: string | null;
}

/**
 * What a preview composes: a ComposeInput but for the balance and the taxes, which the
 * preview reads now (`taxedBy`: whose tax rates, SPEC §14).
 */
export interface PreviewTarget {
  subscriptionId: string;
  customerId: string;
  currency: string;
  periodStart: string;
  periodEnd: string;
  prorationDate: string | null;
  taxedBy: TaxedParty;
  input: (balance: number, taxes: InvoiceTaxes) => ComposeInput;
  /** The subscription's own discount instead of the stored one (a preview of new terms); null: none. */
  subscriptionDiscount?: ComposeDiscount | null;
  /** The plan whose charges price the usage of the period ending at `periodStart` (SPEC §15); default the input's plan. */
  usagePlanId?: string;
  /** The stretch a previewed change would close at its instant (openUsageSpan), billed at its plan's charges. */
  closingSpan?: FreshSpan | null;
}

/**
 * Composes `target` as issuing would compose it now (SPEC §13 "preview"): the customer's
 * current credit balance in its currency applied, a period's usage so far (SPEC §15: the
 * period ending where `target`'s starts) and late usage, a period's discounts and the taxes (SPEC §14;
 * `ctx.config`'s DEFAULT_TAX_RATE_IDS), the same pipeline, nothing stored or locked. Minor
 * units throughout.
 */
export async function composePreview(
  db: Kysely<Database>,
  ctx: { pipeline?: readonly ComposeStep[]; config?: Partial<Pick<Config, 'defaultTaxRateIds'>> },
  target: PreviewTarget,
): Promise<InvoicePreview> {
  const balance = Math.max(await customerBalance(db, target.customerId, target.currency), 0);
  const taxes = await invoiceTaxes(db, target.taxedBy, ctx.config?.defaultTaxRateIds ?? []);
  const input = target.input(balance, taxes);
  // Every preview is of a subscription's invoice: a period's or a plan change's prorations,
  // which take the discounts issuing would give them (SPEC §14). Only a period's invoice takes
  // the usage of the period before it so far (SPEC §15).
  const { compose: discounts } = await invoiceDiscounts(
    db,
    target.subscriptionId,
    target.customerId,
    target.subscriptionDiscount,
  );
  const plan =
    input.subscription === null ? undefined : await findPlan(db, target.usagePlanId ?? input.subscription.plan.id);
  const usage =
    plan === undefined
      ? []
      : (
          await invoiceUsage(
            db,
            { id: target.subscriptionId, customer_id: target.customerId },
            plan,
            target.periodStart,
            target.closingSpan ? [target.closingSpan] : [],
          )
        ).items;
  const composed = composeInvoice({ ...input, discounts, usage }, ctx.pipeline ?? PIPELINE);
  return {
    ...composed,
    customer_id: target.customerId,
    subscription_id: target.subscriptionId,
    billing_reason: 'upcoming',
    currency: target.currency,
    period_start: target.periodStart,
    period_end: target.periodEnd,
    proration_date: target.prorationDate,
  };
}
