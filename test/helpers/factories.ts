// Factories: the fewest calls that make a customer, plan or subscription through the API.
import type { TestApp } from './app.ts';
import { paystackCharge, paystackInvoiceFailed, postPaystack } from './provider-events.ts';

let sequence = 0;

/** Creates a customer with a unique email; returns the API's customer. */
export async function createCustomer(app: TestApp, overrides: Record<string, unknown> = {}) {
  sequence += 1;
  const res = await app.request('POST', '/api/customers', {
    body: { email: `customer${sequence}.${Date.now()}@example.com`, ...overrides },
  });
  if (res.status !== 201) throw new Error(`createCustomer: ${res.status} ${res.text}`);
  return res.body;
}

/** Creates a monthly NGN plan of 5000 minor units unless overridden. */
export async function createPlan(app: TestApp, overrides: Record<string, unknown> = {}) {
  const res = await app.request('POST', '/api/plans', {
    body: { name: 'Pro monthly', amount: 5000, currency: 'NGN', interval: 'month', ...overrides },
  });
  if (res.status !== 201) throw new Error(`createPlan: ${res.status} ${res.text}`);
  return res.body;
}

/** Creates a subscription (a new customer and plan unless given). */
export async function createSubscription(
  app: TestApp,
  options: {
    customerId?: string;
    planId?: string;
    trialPeriodDays?: number;
    plan?: Record<string, unknown>;
  } = {},
) {
  const customerId = options.customerId ?? (await createCustomer(app)).id;
  const planId = options.planId ?? (await createPlan(app, options.plan)).id;
  const body: Record<string, unknown> = { customer_id: customerId, plan_id: planId };
  if (options.trialPeriodDays !== undefined) body.trial_period_days = options.trialPeriodDays;
  const res = await app.request('POST', '/api/subscriptions', { body });
  if (res.status !== 201) throw new Error(`createSubscription: ${res.status} ${res.text}`);
  return res.body;
}

/** Creates a webhook endpoint for `url` receiving every topic unless overridden. */
export async function createWebhookEndpoint(app: TestApp, url: string, overrides: Record<string, unknown> = {}) {
  const res = await app.request('POST', '/api/webhooks', { body: { url, events: ['*'], ...overrides } });
  if (res.status !== 201) throw new Error(`createWebhookEndpoint: ${res.status} ${res.text}`);
  return res.body;
}

/**
 * Records a Paystack payment through POST /api/notify, as the provider would: succeeded
 * (`charge.success`) unless `failed`. With `subscriptionId`, the metadata names it (the
 * subscription moves as SPEC §4 says). The app must be built with PROVIDER_ENV
 * (test/helpers/provider-events.ts). Returns the API's payment.
 */
export async function createPayment(
  app: TestApp,
  options: { subscriptionId?: string; customerId?: string; amount?: number; currency?: string; failed?: boolean } = {},
) {
  const metadata: Record<string, string> = {};
  if (options.subscriptionId) metadata.subscription_id = options.subscriptionId;
  if (options.customerId) metadata.customer_id = options.customerId;
  const charge = paystackCharge({ amount: options.amount ?? 5000, currency: options.currency ?? 'NGN', metadata });
  let reference = charge.data.reference;
  let res;
  if (options.failed) {
    // Paystack reports failed subscription charges as invoice.payment_failed; the metadata
    // rides on the subscription object.
    const failure = paystackInvoiceFailed({ subscriptionCode: `SUB_${reference}`, amount: options.amount ?? 5000 });
    reference = `F${reference}`;
    Object.assign(failure.data.transaction, {
      reference,
      currency: options.currency ?? 'NGN',
      gateway_response: 'Declined',
    });
    Object.assign(failure.data.subscription, { metadata });
    res = await postPaystack(app, failure);
  } else {
    res = await postPaystack(app, charge);
  }
  if (res.status !== 200) throw new Error(`createPayment: ${res.status} ${res.text}`);
  const list = await app.request('GET', '/api/payments?limit=100');
  const payment = list.body.data.find((p: { provider_reference: string }) => p.provider_reference === reference);
  if (!payment) throw new Error(`createPayment: the event was stored but not processed (${reference})`);
  return payment;
}
