// Invoices in tests: read them as the API shows them, and pay or fail them the way a provider
// reports it (signed Paystack events through POST /api/notify, metadata naming our ids).
import type { Deps } from '../../src/deps.ts';
import { type Invoice, toInvoice } from '../../src/modules/invoices/invoices.lifecycle.ts';
import { JOBS } from '../../src/worker/jobs.ts';
import { Worker } from '../../src/worker/runner.ts';
import type { TestApp } from './app.ts';
import { nextSeq, paystackCharge, paystackInvoiceFailed, postPaystack } from './provider-events.ts';

/** The invoices of subscription `id` as the API shows them, oldest period first. */
export async function invoicesOf(app: TestApp, subscriptionId: string): Promise<Invoice[]> {
  const rows = await app.deps.db
    .selectFrom('invoices')
    .selectAll()
    .where('subscription_id', '=', subscriptionId)
    .orderBy('period_start')
    .orderBy('id')
    .execute();
  return rows.map((row) => toInvoice(row, app.deps.config.publicUrl));
}

/** One invoice by id, as the API shows it. */
export async function invoiceById(app: TestApp, id: string): Promise<Invoice> {
  const row = await app.deps.db.selectFrom('invoices').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  return toInvoice(row, app.deps.config.publicUrl);
}

/** `invoice.*` events so far, oldest first: topic and the invoice's id and status. */
export async function invoiceEvents(app: TestApp) {
  const rows = await app.deps.db
    .selectFrom('events')
    .select(['topic', 'data'])
    .where('topic', 'like', 'invoice.%')
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  return rows.map((row) => {
    const data = JSON.parse(row.data) as Invoice;
    return { topic: row.topic, id: data.id, status: data.status, amount_paid: data.amount_paid };
  });
}

export interface ProviderPayment {
  subscriptionId: string;
  /** Minor units. */
  amount: number;
  currency?: string;
  /** Metadata `invoice_id`. */
  invoiceId?: string;
  failed?: boolean;
  reference?: string;
}

/**
 * Reports a Paystack payment for `subscriptionId` (metadata names it, and `invoiceId` when
 * given): `charge.success`, or `invoice.payment_failed` when `failed`. Returns the status
 * of the notify request and the payment's reference.
 */
export async function reportPayment(app: TestApp, payment: ProviderPayment) {
  const metadata: Record<string, string> = { subscription_id: payment.subscriptionId };
  if (payment.invoiceId) metadata.invoice_id = payment.invoiceId;
  const reference = payment.reference ?? `T${nextSeq()}`;
  const currency = payment.currency ?? 'NGN';
  // Provider time = the test clock's, so reports are ordered as they are sent (SPEC §5 stale reports).
  const at = app.clock.now().toISOString();
  let body;
  if (payment.failed) {
    body = paystackInvoiceFailed({ subscriptionCode: `SUB_${reference}`, amount: payment.amount });
    Object.assign(body.data.transaction, { reference, currency, amount: payment.amount, gateway_response: 'Declined' });
    Object.assign(body.data.subscription, { metadata });
    body.data.created_at = at;
  } else {
    body = paystackCharge({ reference, amount: payment.amount, currency, metadata });
    Object.assign(body.data, { paid_at: at, created_at: at });
  }
  const res = await postPaystack(app, body);
  return { status: res.status, reference };
}

/** The payment recorded under Paystack reference `reference` (the row). */
export async function paymentByReference(app: TestApp, reference: string) {
  return app.deps.db
    .selectFrom('payments')
    .selectAll()
    .where('provider_reference', '=', reference)
    .executeTakeFirstOrThrow();
}

/** One worker tick over every job; a failing job throws. Returns what each job handled. */
export async function runWorker(deps: Deps): Promise<Record<string, number>> {
  const failures: string[] = [];
  const log = { error: (object: object) => failures.push(String(Object.values(object)[0])) };
  const handled = await new Worker(deps, JOBS, log).runOnce();
  if (failures.length > 0) throw new Error(`worker job failed: ${failures.join('; ')}`);
  return handled;
}
