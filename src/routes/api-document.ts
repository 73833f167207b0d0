// The API document's content, owned by the entry points: every named schema the routes
// reference, the tags in the order /docs shows them, and the `data` component of every
// outbound topic. http/openapi.ts turns it into /openapi.json without importing a module.
import type { TSchema } from 'typebox';
import type { ApiDocument } from '../http/openapi.ts';
import { apiKeyListSchema, apiKeySchema, createdKeySchema } from '../modules/api-keys/api-keys.schemas.ts';
import { paymentAttemptedSchema } from '../billing/charges.schemas.ts';
import { checkoutLinkSchema } from '../billing/checkout.schemas.ts';
import { paymentMethodSetupSchema } from '../billing/payment-method-setup.schemas.ts';
import { portalSessionSchema } from '../modules/portal-sessions/portal-sessions.schemas.ts';
import { invoicePreviewSchema, subscriptionUpdatedSchema } from '../billing/plan-changes.schemas.ts';
import { paymentAttemptSchema } from '../modules/payment-attempts/payment-attempts.schemas.ts';
import { customerDetailSchema, customerListSchema, customerSchema } from '../modules/customers/customers.schemas.ts';
import { balanceTransactionListSchema, balanceTransactionSchema } from '../modules/balances/balances.schemas.ts';
import {
  couponListSchema,
  couponSchema,
  discountSchema,
  promotionCodeListSchema,
  promotionCodeSchema,
} from '../modules/coupons/coupons.schemas.ts';
import {
  caseListSchema,
  caseSchema,
  caseWithStepsSchema,
  pastDueListSchema,
  pastDueSchema,
  reminderSchema,
  stepSchema,
  upcomingListSchema,
  upcomingSchema,
} from '../modules/dunning/dunning.schemas.ts';
import { eventListSchema, eventSchema } from '../modules/events/events.schemas.ts';
import type { Topic } from '../modules/events/events.topics.ts';
import { healthSchema } from './health.schemas.ts';
import {
  mergedPaymentSchema,
  paymentListSchema,
  paymentSchema,
  refundListSchema,
  refundSchema,
} from '../modules/payments/payments.schemas.ts';
import {
  invoiceDetailSchema,
  invoiceLineSchema,
  invoiceListSchema,
  invoiceSchema,
  invoiceTaxAmountSchema,
} from '../modules/invoices/invoices.schemas.ts';
import {
  creditNoteLineSchema,
  creditNoteListSchema,
  creditNoteRefundSchema,
  creditNoteSchema,
} from '../modules/credit-notes/credit-notes.schemas.ts';
import { paymentMethodListSchema, paymentMethodSchema } from '../modules/payment-methods/payment-methods.schemas.ts';
import { chargeSchema, planListSchema, planSchema } from '../modules/plans/plans.schemas.ts';
import { taxRateListSchema, taxRateSchema } from '../modules/tax-rates/tax-rates.schemas.ts';
import { meterListSchema, meterSchema } from '../modules/meters/meters.schemas.ts';
import {
  customerUsageListSchema,
  customerUsageSchema,
  ingestResponseSchema,
  ingestResultSchema,
  usageEventListSchema,
  usageEventSchema,
} from '../modules/usage/usage.schemas.ts';
import { notifyReceiptSchema } from './notify.schemas.ts';
import { providerEventDetailSchema, providerEventListSchema, providerEventSchema } from '../inbox/inbox.schemas.ts';
import {
  subscriptionDetailSchema,
  subscriptionListSchema,
  subscriptionSchema,
} from '../modules/subscriptions/subscriptions.schemas.ts';
import { testClockListSchema, testClockSchema } from '../modules/test-clocks/test-clocks.schemas.ts';
import {
  attemptSchema,
  deliveryListSchema,
  deliverySchema,
  endpointListSchema,
  endpointSchema,
} from '../modules/webhooks/webhooks.schemas.ts';

/**
 * Every named schema of the API (`$id` = the name under `components.schemas`), registered with
 * the app before the routes so that `{$ref: 'Customer#'}` resolves for validation,
 * serialization and the document alike. A new resource or list envelope goes here.
 */
export const COMPONENT_SCHEMAS: readonly object[] = [
  healthSchema,
  customerSchema,
  customerDetailSchema,
  customerListSchema,
  balanceTransactionSchema,
  balanceTransactionListSchema,
  chargeSchema,
  planSchema,
  planListSchema,
  couponSchema,
  couponListSchema,
  promotionCodeSchema,
  promotionCodeListSchema,
  discountSchema,
  taxRateSchema,
  taxRateListSchema,
  meterSchema,
  meterListSchema,
  ingestResultSchema,
  ingestResponseSchema,
  usageEventSchema,
  usageEventListSchema,
  customerUsageSchema,
  customerUsageListSchema,
  subscriptionSchema,
  subscriptionListSchema,
  subscriptionDetailSchema,
  subscriptionUpdatedSchema,
  invoicePreviewSchema,
  paymentSchema,
  paymentListSchema,
  mergedPaymentSchema,
  refundSchema,
  refundListSchema,
  caseSchema,
  caseListSchema,
  stepSchema,
  caseWithStepsSchema,
  reminderSchema,
  upcomingSchema,
  upcomingListSchema,
  pastDueSchema,
  pastDueListSchema,
  endpointSchema,
  endpointListSchema,
  attemptSchema,
  deliverySchema,
  deliveryListSchema,
  eventSchema,
  eventListSchema,
  apiKeySchema,
  apiKeyListSchema,
  createdKeySchema,
  notifyReceiptSchema,
  providerEventSchema,
  providerEventListSchema,
  providerEventDetailSchema,
  invoiceLineSchema,
  invoiceTaxAmountSchema,
  invoiceSchema,
  invoiceListSchema,
  checkoutLinkSchema,
  paymentMethodSetupSchema,
  portalSessionSchema,
  paymentAttemptSchema,
  invoiceDetailSchema,
  creditNoteLineSchema,
  creditNoteRefundSchema,
  creditNoteSchema,
  creditNoteListSchema,
  paymentAttemptedSchema,
  paymentMethodSchema,
  paymentMethodListSchema,
  testClockSchema,
  testClockListSchema,
];

/** The top-level tags, in the order /docs shows them; every operation uses one of these. */
export const TAGS = [
  { name: 'Health', description: 'Liveness and readiness of the service and its database.' },
  { name: 'Customers', description: 'The people and companies who pay. Emails are unique among live customers.' },
  { name: 'Plans', description: 'Prices: an amount per billing interval. Immutable once created; archive instead.' },
  {
    name: 'Coupons',
    description:
      'Coupons and the promotion codes customers type: percent or amount off, once, repeating or forever, applied to a subscription or a customer (SPEC §14).',
  },
  {
    name: 'Tax rates',
    description:
      'Taxes applied to invoices (SPEC §14), inclusive or exclusive; from the subscription, its plan, the customer or DEFAULT_TAX_RATE_IDS.',
  },
  {
    name: 'Usage',
    description:
      'Usage-based billing (SPEC §15): meters say how events count; usage events are sent in batches of up to 1,000, deduplicated by transaction_id per customer, and aggregated per period.',
  },
  {
    name: 'Subscriptions',
    description: 'A customer on a plan, moving through trialing, active, past_due, paused, cancelled (SPEC §4).',
  },
  {
    name: 'Payments',
    description:
      'Payments and refunds, recorded from verified provider events; refunds can be requested through the API (POST /api/payments/{id}/refund).',
  },
  {
    name: 'Invoices',
    description:
      'What a customer owes per billing period (SPEC §9): issued by the service, settled by payments, voided or written off; collecting it through Paystack or Stripe.',
  },
  {
    name: 'Credit notes',
    description:
      "Corrections of finalized invoices (SPEC §14): before payment they lower what is due; after payment they are refunded (exactly once, through the payment's provider), credited to the customer's balance or returned out of band.",
  },
  { name: 'Dunning', description: 'The follow-up of failed payments: open cases, reminders, past-due subscriptions.' },
  {
    name: 'Webhooks',
    description:
      'Your endpoints for outbound events, their deliveries and attempts; the payloads are under `webhooks`.',
  },
  { name: 'Events', description: 'Everything that happened, with the same `data` the webhooks carry.' },
  { name: 'API keys', description: 'Keys with `read`, `write` or `admin` scope (admin only): create, rotate, revoke.' },
  { name: 'Provider events', description: 'Inbound events from Paystack and Stripe, verified by their signatures.' },
  {
    name: 'Test clocks',
    description:
      'Simulated time per customer for staging and CI (TEST_CLOCKS=true; otherwise 404): months of renewals, invoices and dunning in seconds.',
  },
] as const;

/** The component each topic's `data` is (docs/webhooks.md), and when the topic is sent. */
export const TOPIC_DATA: Record<Topic, { schema: TSchema; when: string }> = {
  'customer.created': { schema: customerSchema, when: 'A customer was created (through the API or attribution).' },
  'customer.updated': { schema: customerSchema, when: 'A customer changed.' },
  'customer.deleted': { schema: customerSchema, when: 'A customer was deleted.' },
  'customer.discount.created': {
    schema: discountSchema,
    when: 'A coupon or promotion code was redeemed: a discount on a subscription (its creation) or on a customer (its creation or change).',
  },
  'customer.discount.deleted': {
    schema: discountSchema,
    when: "A customer's own discount was removed (PATCH `coupon: null`) or replaced by another.",
  },
  'coupon.created': { schema: couponSchema, when: 'A coupon was created.' },
  'coupon.updated': { schema: couponSchema, when: "A coupon's name or metadata changed." },
  'coupon.deleted': {
    schema: couponSchema,
    when: 'A coupon was deleted: no new redemptions; the discounts made keep applying.',
  },
  'promotion_code.created': { schema: promotionCodeSchema, when: 'A promotion code was created.' },
  'promotion_code.updated': {
    schema: promotionCodeSchema,
    when: 'A promotion code was activated or deactivated, or its metadata changed.',
  },
  'customer.balance_changed': {
    schema: balanceTransactionSchema,
    when: "A customer's credit balance moved: an adjustment, an overpayment, credit applied to an invoice (data: the transaction).",
  },
  'subscription.created': { schema: subscriptionSchema, when: 'A subscription was created.' },
  'subscription.updated': {
    schema: subscriptionUpdatedSchema,
    when: 'A subscription changed: status (paused, resumed, activated, …), its renewal into the next billing period, or its plan or quantity (with `previous_attributes`).',
  },
  'subscription.update_scheduled': {
    schema: subscriptionUpdatedSchema,
    when: 'A plan or quantity change was scheduled for the period end (`pending_update`; `previous_attributes` has the one it replaced).',
  },
  'subscription.update_applied': {
    schema: subscriptionUpdatedSchema,
    when: 'The renewal applied a scheduled change: the new period bills the new plan and quantity.',
  },
  'subscription.renewed': {
    schema: subscriptionSchema,
    when: 'An invoice of the subscription was paid: it is active (its period does not move; the renewal moves it).',
  },
  'subscription.past_due': { schema: subscriptionSchema, when: 'A renewal went unpaid.' },
  'subscription.cancelled': { schema: subscriptionSchema, when: 'A subscription ended.' },
  'payment.succeeded': { schema: paymentSchema, when: 'A provider reported a successful payment.' },
  'payment.failed': { schema: paymentSchema, when: 'A provider reported a failed payment.' },
  'payment.refunded': { schema: paymentSchema, when: 'A refund succeeded; `amount_refunded` includes it.' },
  'payment.refund_failed': {
    schema: paymentSchema,
    when: 'A refund (succeeded, or pending after POST /api/payments/{id}/refund) failed or was cancelled at the provider.',
  },
  'payment.merged': {
    schema: mergedPaymentSchema,
    when: 'Two records of one charge became one (a Stripe invoice and its PaymentIntent).',
  },
  'invoice.created': {
    schema: invoiceSchema,
    when: 'An invoice was issued (subscription start, trial end or renewal): `open` (final), or `draft` (a renewal with usage or prorations, finalized after INVOICE_FINALIZE_DELAY).',
  },
  'invoice.finalized': {
    schema: invoiceSchema,
    when: 'A draft became `open`: numbered, its hosted page live, and collected like any open invoice.',
  },
  'invoice.paid': { schema: invoiceSchema, when: 'Payments settled the whole amount due.' },
  'invoice.payment_failed': {
    schema: invoiceSchema,
    when: 'A payment for the invoice failed; `attempt_count` counts it.',
  },
  'invoice.payment_attempted': {
    schema: paymentAttemptedSchema,
    when: "The service charged a saved method for the invoice (SPEC §10): the attempt's outcome (succeeded, failed, requires_action).",
  },
  'invoice.voided': { schema: invoiceSchema, when: 'The invoice was voided: nothing is owed on it any more.' },
  'invoice.marked_uncollectible': {
    schema: invoiceSchema,
    when: 'The invoice was marked uncollectible (by the API or dunning cancelling the subscription).',
  },
  'credit_note.created': {
    schema: creditNoteSchema,
    when: 'A credit note was issued: the invoice owes less, or money goes back (refund, credit, out of band).',
  },
  'credit_note.voided': {
    schema: creditNoteSchema,
    when: 'A credit note was voided: what it lowered is owed again, its credit left the balance.',
  },
  'payment_method.attached': {
    schema: paymentMethodSchema,
    when: 'A succeeded payment carried a reusable card or account not saved for its customer yet.',
  },
  'payment_method.detached': { schema: paymentMethodSchema, when: 'A saved payment method was removed (DELETE).' },
  'dunning.started': { schema: caseSchema, when: 'A failed payment opened a dunning case.' },
  'dunning.reminder': { schema: reminderSchema, when: 'A reminder step of the dunning schedule is due.' },
  'dunning.recovered': { schema: caseSchema, when: 'A payment closed the dunning case.' },
  'dunning.exhausted': { schema: caseSchema, when: 'The schedule ran out; the final action follows.' },
  'webhook_endpoint.disabled': {
    schema: endpointSchema,
    when: 'An endpoint was disabled (by PATCH, a 410, or 5 days of failures).',
  },
  'webhook.test': { schema: endpointSchema, when: 'POST /api/webhooks/{id}/test: sent to that endpoint only.' },
  'test_clock.advancing': { schema: testClockSchema, when: 'An advance of the test clock was accepted.' },
  'test_clock.ready': {
    schema: testClockSchema,
    when: 'The test clock reached its frozen_time: every due piece of work up to it has run.',
  },
};

/** Everything routes/ contributes to /openapi.json, for registerOpenApi. */
export const API_DOCUMENT: ApiDocument = { schemas: COMPONENT_SCHEMAS, tags: TAGS, topics: TOPIC_DATA };
