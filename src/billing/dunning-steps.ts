// A step of the dunning schedule (SPEC §4, §10 "Dunning retries"). When the case's invoice
// can still be charged — open, something remaining, automatic charges not stopped, and the
// customer has a saved default method — the step first asks for a charge and WAITS for it:
//
//   1. the dunning job (its claim transaction) sets the invoice's `next_payment_attempt_at`
//      to now and the case's `retry_requested_at`; the case's `next_action_at` becomes the
//      end of the wait (RETRY_WAIT_MS), so the case is not claimed again meanwhile. No
//      provider call here: the `charge_invoices` job makes it, outside any
//      transaction, exactly once per invoice (charges.ts);
//   2. the charge's outcome is recorded in charges.ts's transaction, which calls
//      finishRetryStep: a failure (declined, refused, needs the customer) sends this step's
//      `dunning.reminder` there and then; a success pays the invoice through the payment
//      path, which recovers the case (`dunning.recovered`) — no reminder;
//   3. no outcome by the end of the wait (the provider still undecided, the charge dropped):
//      the dunning job sends the reminder (`charge.status: unanswered`).
//
// Exactly once: the request, the wait and the reminder each change the case under its lock
// and clear or set `retry_requested_at` in the same transaction, so one step asks for one
// charge and sends one reminder whoever gets there first; `dunning_steps` (case, step) is the
// backstop. Collection calls this module, never the reverse (import direction).
import type { Transaction } from 'kysely';
import type { Database } from '../db/database.ts';
import { claimRows, forUpdate } from '../db/locking.ts';
import { hostedInvoiceUrl, type InvoiceContext, updateInvoice } from '../modules/invoices/invoices.lifecycle.ts';
import type { InvoiceRow } from '../db/tables/invoices.table.ts';
import { hasDefaultPaymentMethod } from '../modules/payment-methods/payment-methods.ts';
import { type DunningContext, markRetryRequested, recordReminder } from '../modules/dunning/dunning.cases.ts';
import type { DunningReminder, ReminderCharge } from '../modules/dunning/dunning.schemas.ts';
import type { DunningCaseRow } from '../db/tables/dunning.table.ts';

export type { DunningReminder, ReminderCharge };

/**
 * How long a step's reminder waits for its charge's outcome (ms). The charge job claims the
 * invoice within a tick and a provider call lasts PROVIDER_TIMEOUT at most; an `unknown`
 * answer is asked about again every minute. After an hour the reminder goes out anyway.
 */
export const RETRY_WAIT_MS = 3_600_000;

/** What a step needs: the time, the schedule, and PUBLIC_URL for the hosted invoice page. */
export type DunningStepContext = DunningContext & InvoiceContext;

/** What a failed retry tells the reminder (charges.ts fills it). */
export interface FailedRetry {
  charge: ReminderCharge;
  /** The provider's page for the customer (Paystack `authorization_url`), when it gave one. */
  providerUrl: string | null;
  /** The charge needed the customer: the invoice is not charged automatically again. */
  needsCustomer: boolean;
}

/** True when the worker may charge `invoice` again for a dunning step. */
function isChargeable(invoice: InvoiceRow): boolean {
  return (
    invoice.status === 'open' &&
    Number(invoice.amount_due) - Number(invoice.amount_paid) > 0 &&
    invoice.charges_stopped_at === null
  );
}

/**
 * Sends the reminder of step `row.step + 1` through the record (dunning.cases recordReminder):
 * the case with `hosted_invoice_url`, `action_url` (the provider's page, else the hosted one,
 * when the failed retry needs the customer) and `charge`. `invoice` is the case's invoice
 * (undefined when it chases none).
 */
async function sendReminder(
  trx: Transaction<Database>,
  ctx: DunningStepContext,
  row: DunningCaseRow,
  invoice: Pick<InvoiceRow, 'hosted_token'> | undefined,
  retry: FailedRetry | null,
): Promise<DunningReminder> {
  const hosted = invoice ? hostedInvoiceUrl(ctx.config.publicUrl, invoice.hosted_token) : null;
  return recordReminder(trx, ctx, row, {
    hosted_invoice_url: hosted,
    action_url: retry?.needsCustomer ? (retry.providerUrl ?? hosted) : null,
    charge: retry?.charge ?? null,
  });
}

/**
 * Takes the due step of the claimed open case `row` (lock order: the case is claimed, its
 * invoice is then taken only if no one holds it — SKIP LOCKED — so this never waits behind a
 * payment that holds the invoice and waits for the case):
 * - a retry awaited past its wait → the reminder, `charge.status: unanswered`;
 * - a chargeable invoice (see the header) → the charge is requested and the step waits;
 * - otherwise → the reminder at once (as before retries existed).
 * Returns what it did; `busy` when the invoice is locked by another transaction (the case
 * stays due and is taken on a later run).
 */
export async function takeStep(
  trx: Transaction<Database>,
  ctx: DunningStepContext,
  row: DunningCaseRow,
): Promise<'reminded' | 'charging' | 'busy'> {
  let invoice: InvoiceRow | undefined;
  if (row.invoice_id !== null) {
    invoice = await claimRows(
      trx.selectFrom('invoices').selectAll().where('id', '=', row.invoice_id),
      trx,
    ).executeTakeFirst();
    if (!invoice) return 'busy';
  }
  if (row.retry_requested_at !== null) {
    await sendReminder(trx, ctx, row, invoice, {
      charge: { attempt_id: null, status: 'unanswered', failure_code: null, failure_message: null },
      providerUrl: null,
      needsCustomer: false,
    });
    return 'reminded';
  }
  if (invoice && isChargeable(invoice) && (await hasDefaultPaymentMethod(trx, invoice.customer_id))) {
    const now = ctx.clock.now();
    const nowIso = now.toISOString();
    // The charge job's request (charges.ts requestInvoiceCharge does the same write).
    await updateInvoice(trx, ctx, invoice, { next_payment_attempt_at: nowIso });
    await markRetryRequested(trx, row.id, nowIso, new Date(now.getTime() + RETRY_WAIT_MS).toISOString());
    return 'charging';
  }
  await sendReminder(trx, ctx, row, invoice, null);
  return 'reminded';
}

/**
 * Called by charges.ts in the transaction that records a charge of invoice `invoiceId`
 * (`inv_…`), which holds the invoice's lock (lock order: invoices → dunning_cases): when the
 * open case chasing it awaits a retry, the step's reminder goes out now, with `retry` (the
 * failed charge), or with no charge when `retry` is null (nothing was charged: the method or
 * the provider's key went away). Does nothing otherwise — a success recovers the case
 * through the payment path. Returns the reminder sent, if any.
 */
export async function finishRetryStep(
  trx: Transaction<Database>,
  ctx: DunningStepContext,
  invoice: Pick<InvoiceRow, 'id' | 'hosted_token'>,
  retry: FailedRetry | null,
): Promise<DunningReminder | undefined> {
  const row = await forUpdate(
    trx
      .selectFrom('dunning_cases')
      .selectAll()
      .where('invoice_id', '=', invoice.id)
      .where('status', '=', 'open')
      .where('retry_requested_at', 'is not', null),
    trx,
  ).executeTakeFirst();
  if (!row) return undefined;
  return sendReminder(trx, ctx, row, invoice, retry);
}
