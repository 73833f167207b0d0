// POST /api/invoices/{id}/pay (SPEC §9): an invoice paid out of band (cash, bank transfer).
// It records a payment with provider `manual` for what remains, in the invoice's currency,
// and settles the invoice through the same path as a provider's payment, so the subscription
// and its dunning case move exactly as they would for any payment.
import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import Type, { type Static } from 'typebox';
import type { Database } from '../db/database.ts';
import { transactionWithRetry } from '../db/transaction.ts';
import { NotFoundError, StateConflictError } from '../http/errors.ts';
import { recordPaymentReport } from '../modules/payments/payments.recording.ts';
import { lockPaymentReference } from '../modules/payments/payments.references.ts';
import { MANUAL_PROVIDER } from '../db/tables/payments.table.ts';
import { lockSubscription } from '../modules/subscriptions/subscriptions.lifecycle.ts';
import { applySuccessfulPayment, type PaymentContext } from './subscription-payments.ts';
import { isPayable } from '../modules/invoices/invoices.status.ts';
import { findInvoiceRow, type Invoice, lockInvoice, toInvoice } from '../modules/invoices/invoices.lifecycle.ts';
import { settlePayment } from './settle.ts';
import { withClockFor } from '../modules/test-clocks/test-clocks.time.ts';

/** The exact 409 body text for paying an invoice that is `paid` or `void` (SPEC §2). */
export const CANNOT_PAY = 'invoice cannot be paid in its current state';

export const payInvoiceBody = Type.Object(
  {
    paid_out_of_band: Type.Literal(true, {
      description: 'Must be `true`: the money arrived outside the payment providers (cash, bank transfer).',
    }),
    reference: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 200,
        description:
          "Your reference for the money received (a bank transfer's reference): the manual payment's `provider_reference`, unique. Default: a generated `oob_…`.",
      }),
    ),
  },
  { additionalProperties: false, examples: [{ paid_out_of_band: true, reference: 'TRF-2026-0117-4411' }] },
);

export type PayInvoiceInput = Static<typeof payInvoiceBody>;

/**
 * Pays invoice `id` out of band: records a succeeded payment (provider `manual`, reference
 * `input.reference` or a generated `oob_…`) for its `amount_remaining` in its currency, which
 * settles it (`paid`, `invoice.paid`) and moves its subscription like any payment
 * (subscription-payments.ts). Locks the subscription, then the invoice (db/locking.ts).
 * Returns the invoice after. Throws 404 `not_found` for an unknown invoice; 409
 * `validation_error` (CANNOT_PAY) when it is `paid` or `void`, or when a manual payment with
 * that reference is recorded already — nothing changes then.
 */
export async function payInvoiceOutOfBand(
  db: Kysely<Database>,
  apiCtx: PaymentContext,
  id: string,
  input: PayInvoiceInput,
): Promise<Invoice> {
  return transactionWithRetry(db, async (trx) => {
    const found = await findInvoiceRow(trx, id);
    if (!found) throw new NotFoundError('invoice', id);
    const ctx = await withClockFor(trx, apiCtx, found.test_clock_id);
    if (found.subscription_id !== null) await lockSubscription(trx, found.subscription_id);
    const row = await lockInvoice(trx, id);
    if (!isPayable(row.status)) throw new StateConflictError(`${CANNOT_PAY} (${row.status})`);
    const reference = input.reference ?? `oob_${randomBytes(16).toString('hex')}`;
    const locked = await lockPaymentReference(trx, MANUAL_PROVIDER, reference);
    if (locked.payment) {
      throw new StateConflictError(`a manual payment with reference ${reference} is recorded already`);
    }
    const now = ctx.clock.now().toISOString();
    const amount = Number(row.amount_due) - Number(row.amount_paid);
    const change = await recordPaymentReport(
      trx,
      ctx.clock,
      locked,
      {
        provider: MANUAL_PROVIDER,
        reference,
        amount,
        currency: row.currency,
        failureReason: null,
        occurredAt: now,
        customerId: row.customer_id,
        subscriptionId: row.subscription_id,
      },
      'succeeded',
    );
    if (change.refused) throw new Error(`manual payment refused: ${change.reason}`);
    const facts = { paymentId: change.payment.id, amount, currency: row.currency, occurredAt: now, invoiceId: row.id };
    if (row.subscription_id !== null) await applySuccessfulPayment(trx, ctx, row.subscription_id, facts);
    else await settlePayment(trx, ctx, { customerId: row.customer_id, subscriptionId: null }, facts);
    return toInvoice(await lockInvoice(trx, id), ctx.config.publicUrl);
  });
}
