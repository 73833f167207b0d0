// Factories: the fewest calls that make a customer, plan or subscription through the API.
import type { TestApp } from './app.ts';

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
