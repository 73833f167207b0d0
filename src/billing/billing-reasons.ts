// Stripe's `invoice.billing_reason` for each reason the billing core issues an invoice for
// (SPEC §9 "Billing reason"): the issuer knows why it issues one, and the invoice keeps it.
import type { InvoiceBillingReason } from '../db/tables/invoices.table.ts';
import type { InvoiceReason } from './compose/types.ts';

/**
 * The `billing_reason` an invoice composed for each reason is stored with (Stripe's
 * https://docs.stripe.com/api/invoices/object#invoice_object-billing_reason): a subscription's
 * first invoice at its creation is `subscription_create`; a renewal, a trial's end, a period
 * paid in advance and a closed period's usage `subscription_cycle`; a plan change's invoice —
 * its `always_invoice` prorations or the new period it starts (SPEC §13) — `subscription_update`;
 * a one-off invoice `manual`. A preview is no invoice: it reads `upcoming` (composePreview).
 */
export const BILLING_REASON_OF: { readonly [reason in Exclude<InvoiceReason, 'preview'>]: InvoiceBillingReason } = {
  first_period: 'subscription_create',
  renewal: 'subscription_cycle',
  subscription_update: 'subscription_update',
  one_off: 'manual',
};
