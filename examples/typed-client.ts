// A typed client of the Billing & Payments API: openapi-fetch over the types openapi-typescript
// generated from /openapi.json (examples/api.d.ts, `npm run generate:client`). Every path,
// parameter, body and response below is checked by TypeScript against the API's document.
//
//   BILLING_URL=http://127.0.0.1:3000 BILLING_API_KEY=… npx node examples/typed-client.ts
//
// It creates a customer, lists customers five at a time, creates a plan and a subscription,
// cancels it, and handles a 404 and a 400 through their typed error bodies.
import createClient from 'openapi-fetch';
import type { components, paths } from './api.d.ts';

export type Customer = components['schemas']['Customer'];
export type Subscription = components['schemas']['Subscription'];
type ApiError = components['schemas']['Error'];

/** What the walk-through did, for the caller to check or print. */
export interface ExampleResult {
  customer: Customer;
  listed: { count: number; limit: number; total: number };
  subscription: Subscription;
  cancelled: Subscription;
  notFound: { status: number; code: ApiError['code']; message: string };
  invalid: { status: number; fields: string[] };
}

/** A client bound to one instance and API key (`Authorization: Bearer <key>`). */
export function billingClient(baseUrl: string, apiKey: string) {
  return createClient<paths>({ baseUrl, headers: { authorization: `Bearer ${apiKey}` } });
}

/** Throws with the API's own message when a call that should succeed did not. */
function expectOk<T, E extends { code: string; message: string }>(
  result: { data?: T; error?: E; response: Response },
  what: string,
): T {
  if (result.data === undefined) {
    throw new Error(`${what}: ${result.response.status} ${result.error?.code}: ${result.error?.message}`);
  }
  return result.data;
}

/**
 * Runs the walk-through against the API at `baseUrl` with a `write` (or `admin`) key. `log`
 * receives one line per step. Throws when a step does not answer as documented.
 */
export async function runExample(
  baseUrl: string,
  apiKey: string,
  log: (line: string) => void = () => {},
): Promise<ExampleResult> {
  const client = billingClient(baseUrl, apiKey);
  const email = `ada.${Date.now()}@example.com`;

  const customer = expectOk(
    await client.POST('/api/customers', {
      body: { email, name: 'Ada Lovelace', metadata: { source: 'typed-client' } },
      headers: { 'idempotency-key': `create-customer-${email}` },
    }),
    'create customer',
  );
  log(`created customer ${customer.id} <${customer.email}>`);

  // `limit` is a number here: the document says page and limit are integers.
  const page = expectOk(
    await client.GET('/api/customers', { params: { query: { limit: 5, sort_by: 'created_at', sort_order: 'desc' } } }),
    'list customers',
  );
  log(`listed ${page.data.length} of ${page.meta.total} customers (limit ${page.meta.limit})`);

  const plan = expectOk(
    await client.POST('/api/plans', {
      body: { name: 'Pro monthly', amount: 5000, currency: 'NGN', interval: 'month', trial_period_days: 14 },
    }),
    'create plan',
  );
  log(`created plan ${plan.id}: ${plan.amount} ${plan.currency} per ${plan.interval}`);

  const subscription = expectOk(
    await client.POST('/api/subscriptions', { body: { customer_id: customer.id, plan_id: plan.id } }),
    'create subscription',
  );
  log(`created subscription ${subscription.id} (${subscription.status})`);

  // The cancel body is optional: without one the subscription ends now.
  const cancelled = expectOk(
    await client.PUT('/api/subscriptions/{id}/cancel', { params: { path: { id: subscription.id } } }),
    'cancel subscription',
  );
  log(`cancelled ${cancelled.id}: ${cancelled.status}, reason ${cancelled.cancellation_reason}`);

  // A typed 404: `error` is the API's Error envelope, `code` one of its documented codes.
  const missing = await client.GET('/api/customers/{id}', {
    params: { path: { id: 'cus_00000000000000000000000000' } },
  });
  if (missing.data !== undefined || missing.error === undefined) throw new Error('expected a 404');
  const notFound = { status: missing.response.status, code: missing.error.code, message: missing.error.message };
  log(`GET unknown customer → ${notFound.status} ${notFound.code}: ${notFound.message}`);

  // A typed 400: the ValidationError body names each invalid field.
  const bad = await client.POST('/api/customers', { body: { email: 'not-an-email' } });
  if (bad.error === undefined) throw new Error('expected a 400');
  const fields = 'errors' in bad.error ? bad.error.errors.map((e) => e.name) : [];
  const invalid = { status: bad.response.status, fields };
  log(`POST a bad email → ${invalid.status} ${bad.error.code}: invalid ${fields.join(', ')}`);

  return {
    customer,
    listed: { count: page.data.length, limit: page.meta.limit, total: page.meta.total },
    subscription,
    cancelled,
    notFound,
    invalid,
  };
}

if (import.meta.main) {
  const baseUrl = process.env.BILLING_URL ?? 'http://127.0.0.1:3000';
  const apiKey = process.env.BILLING_API_KEY;
  if (!apiKey) {
    process.stderr.write('set BILLING_API_KEY to a write or admin key (npx billing keys create …)\n');
    process.exit(2);
  }
  await runExample(baseUrl, apiKey, (line) => process.stdout.write(`${line}\n`));
}
