// `billing demo`: adds a small, realistic story beside whatever the database holds (its
// customers' emails are under @demo.example, so nothing collides with the user's), so
// `npm start` + `npx billing demo` shows every list populated.
//
// Decision: the demo builds the app in this process over DATABASE_URL and sends every
// request through the app's real routes (Fastify's inject: routing, auth, validation,
// raw-body signature checks — the same path as a socket request), not HTTP to a running
// server. A new user then needs no server URL and no API key for it, and it works the same
// whether `npm start` is running or not; a running server on the same database shows the
// result at once. The provider events are signed with the configured secrets exactly as
// Paystack and Stripe sign them (Stripe's own library makes the header) and go through
// POST /api/notify, so they are verified, stored in the inbox and processed like real ones.
//
// The database, the app and Stripe's library are imported only once the secrets are checked:
// a demo that stops at exit 78 costs ≈ 0.1 s of CPU, not the ≈ 0.6 s of loading them.
import { createHmac, randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../config.ts';
import type { Deps } from '../deps.ts';

/** Where the demo writes its report (the CLI's io). */
export interface DemoIo {
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown };
}

/**
 * Exit codes: 0 done; 1 refused (the demo's data is already there, or the database has
 * provider events the demo did not send) or a step failed; 78 provider secrets missing.
 */
export const DEMO_EXIT = { ok: 0, refused: 1, config: 78 } as const;

const MISSING_SECRETS = `billing demo signs Paystack and Stripe events the way the providers do, so it needs the
secrets the service verifies them with. Set them, with the same values for \`npm start\`
and \`npx billing demo\` — any test values will do on a development database:

  export PAYSTACK_SECRET_KEY=sk_test_demo_paystack_0123456789
  export STRIPE_WEBHOOK_SECRET=whsec_demo_stripe_0123456789
  npm start            # in one terminal
  npx billing demo     # in another (same DATABASE_URL)

(or put them in a .env file in this directory: both read it; see .env.example). On a SQLite
database the key saved payment methods are encrypted with is generated beside it.
`;

/** The domain of every demo customer's email: reserved (RFC 2606), never a real person's. */
export const DEMO_EMAIL_DOMAIN = 'demo.example';

/**
 * Why the demo must not write to this database, or undefined when it may: its customers are
 * already there (deleted ones included: their emails stay taken), or the inbox holds provider
 * events — which, with no demo customer yet, the demo did not send: a database that receives
 * real Paystack or Stripe events must never get the demo's signed fake payments. Reads
 * without creating or migrating anything.
 */
async function refusal(config: Readonly<Config>): Promise<string | undefined> {
  const { openDatabase } = await import('../db/connect.ts');
  const handle = openDatabase(config.database);
  try {
    const tables = new Set((await handle.db.introspection.getTables()).map((table) => table.name));
    if (tables.has('customers')) {
      const demo = await handle.db
        .selectFrom('customers')
        .select('id')
        .where('email', 'like', `%@${DEMO_EMAIL_DOMAIN}`)
        .limit(1)
        .executeTakeFirst();
      if (demo) {
        return (
          `the demo's data is already in this database (customers under @${DEMO_EMAIL_DOMAIN}); nothing was changed.\n` +
          'Look around with GET /api/customers, or point DATABASE_URL at a new database ' +
          '(e.g. DATABASE_URL=sqlite:./data/demo.db) to run it again.\n'
        );
      }
    }
    if (tables.has('provider_events')) {
      const event = await handle.db.selectFrom('provider_events').select('id').limit(1).executeTakeFirst();
      if (event) {
        return (
          'this database has received Paystack or Stripe events the demo did not send, so it may be a live one, ' +
          'and the demo posts fake signed payments; nothing was changed.\n' +
          'Run it on a development database (e.g. DATABASE_URL=sqlite:./data/demo.db).\n'
        );
      }
    }
    return undefined;
  } finally {
    await handle.close();
  }
}

class DemoStepError extends Error {}

/** What the story reads of a created resource. */
interface Resource {
  id: string;
}

/** The story's requests, through the app's routes with a key that exists only in this process. */
class DemoClient {
  readonly #app: FastifyInstance;
  readonly #key: string;
  readonly #config: Readonly<Config>;

  constructor(app: FastifyInstance, key: string, config: Readonly<Config>) {
    this.#app = app;
    this.#key = key;
    this.#config = config;
  }

  /** An API call; anything but `expected` stops the demo with the answer. */
  async api<T = Resource>(method: 'GET' | 'POST' | 'PUT', url: string, body?: unknown, expected = 200): Promise<T> {
    const res = await this.#app.inject({
      method,
      url,
      headers: { authorization: `Bearer ${this.#key}` },
      ...(body === undefined ? {} : { payload: body as Record<string, unknown> }),
    });
    if (res.statusCode !== expected) {
      throw new DemoStepError(`${method} ${url} answered ${res.statusCode}: ${res.body}`);
    }
    return res.json() as T;
  }

  /** A Paystack event, signed as Paystack signs (hex HMAC-SHA512 of the body with the secret key). */
  async paystack(event: unknown): Promise<void> {
    const body = JSON.stringify(event);
    const signature = createHmac('sha512', this.#config.paystackSecretKey).update(body).digest('hex');
    await this.#notify('paystack', body, { 'x-paystack-signature': signature });
  }

  /** A Stripe event, with the Stripe-Signature header made by Stripe's own library. */
  async stripe(event: unknown): Promise<void> {
    const body = JSON.stringify(event);
    const { default: Stripe } = await import('stripe');
    const signature = Stripe.webhooks.generateTestHeaderString({
      payload: body,
      secret: this.#config.stripeWebhookSecret,
      timestamp: Math.floor(Date.now() / 1000),
    });
    await this.#notify('stripe', body, { 'stripe-signature': signature });
  }

  async #notify(provider: string, body: string, headers: Record<string, string>): Promise<void> {
    const res = await this.#app.inject({
      method: 'POST',
      url: `/api/notify?p=${provider}`,
      headers: { 'content-type': 'application/json', ...headers },
      payload: body,
    });
    if (res.statusCode !== 200) {
      throw new DemoStepError(`POST /api/notify?p=${provider} answered ${res.statusCode}: ${res.body}`);
    }
  }
}

const MINUTE = 60_000;

/** A provider id that will not collide with another demo run's. */
function providerId(prefix: string): string {
  return `${prefix}${randomBytes(9).toString('hex')}`;
}

function paystackCharge(options: {
  reference: string;
  amount: number;
  email: string;
  name: [string, string];
  metadata: Record<string, string>;
  paidAt: Date;
}) {
  return {
    event: 'charge.success',
    data: {
      id: Number.parseInt(randomBytes(4).toString('hex'), 16),
      domain: 'test',
      status: 'success',
      reference: options.reference,
      amount: options.amount,
      gateway_response: 'Successful',
      paid_at: options.paidAt.toISOString(),
      created_at: new Date(options.paidAt.getTime() - 20_000).toISOString(),
      channel: 'card',
      currency: 'NGN',
      metadata: options.metadata,
      fees: Math.round(options.amount * 0.015),
      authorization: {
        authorization_code: providerId('AUTH_'),
        bin: '408408',
        last4: '4081',
        exp_month: '12',
        exp_year: '2030',
        channel: 'card',
        card_type: 'visa',
        bank: 'TEST BANK',
        country_code: 'NG',
        brand: 'visa',
        reusable: true,
        signature: providerId('SIG_'),
      },
      customer: {
        id: Number.parseInt(randomBytes(3).toString('hex'), 16),
        first_name: options.name[0],
        last_name: options.name[1],
        email: options.email,
        customer_code: providerId('CUS_'),
        phone: null,
        metadata: null,
        risk_action: 'default',
      },
      requested_amount: options.amount,
    },
  };
}

function stripePaymentIntentEvent(
  type: 'payment_intent.succeeded' | 'payment_intent.payment_failed',
  options: { amount: number; email: string; metadata: Record<string, string>; at: Date; error?: string },
) {
  const created = Math.floor(options.at.getTime() / 1000);
  const failed = type === 'payment_intent.payment_failed';
  return {
    id: providerId('evt_'),
    object: 'event',
    api_version: '2025-03-31.basil',
    created,
    type,
    livemode: false,
    pending_webhooks: 1,
    request: { id: null, idempotency_key: null },
    data: {
      object: {
        id: providerId('pi_'),
        object: 'payment_intent',
        amount: options.amount,
        amount_received: failed ? 0 : options.amount,
        currency: 'usd',
        customer: providerId('cus_'),
        latest_charge: providerId('ch_'),
        last_payment_error: failed
          ? { code: 'card_declined', decline_code: 'insufficient_funds', message: options.error, type: 'card_error' }
          : null,
        metadata: options.metadata,
        receipt_email: options.email,
        status: failed ? 'requires_payment_method' : 'succeeded',
        created,
        livemode: false,
      },
    },
  };
}

/** What the story made that a newcomer looks at next. */
interface Story {
  /** Linus's renewal invoice: open, its card payment declined; `hosted_invoice_url` is its page. */
  invoice: { id: string; hosted_invoice_url: string; amount_remaining: number; currency: string };
  /** The dunning case chasing that invoice. */
  dunningCase: Resource;
  /** Adaeze, whose Paystack card was saved as a payment method. */
  savedMethodCustomer: Resource;
  /** Every customer the story created, to check its payments landed. */
  customerIds: string[];
}

/**
 * The renewal the worker runs when a period ends, for the demo's own subscription only (the
 * user's subscriptions are never touched): after a resume its period ends now, and the
 * renewal issues the new period's invoice. A running server's worker may have renewed it
 * first; then the invoice is already there.
 */
async function renewNow(deps: Deps, subscriptionId: string): Promise<void> {
  const [{ transactionWithRetry }, { lockSubscription }, { lockCustomerBalances }, { renewSubscription }] =
    await Promise.all([
      import('../db/transaction.ts'),
      import('../modules/subscriptions/subscriptions.lifecycle.ts'),
      import('../modules/balances/balances.ledger.ts'),
      import('../billing/renewals.ts'),
    ]);
  await transactionWithRetry(deps.db, async (trx) => {
    const row = await lockSubscription(trx, subscriptionId);
    if (row.status !== 'active' || row.current_period_end === null) return;
    if (new Date(row.current_period_end).getTime() > deps.clock.now().getTime()) return;
    await lockCustomerBalances(trx, [row.customer_id]);
    await renewSubscription(trx, deps, row);
  });
}

/** The story itself. Returns what a newcomer looks at next. */
async function tellStory(client: DemoClient, deps: Deps): Promise<Story> {
  const now = Date.now();
  const at = (minutesAgo: number) => new Date(now - minutesAgo * MINUTE);

  const starter = await client.api(
    'POST',
    '/api/plans',
    {
      name: 'Starter (monthly)',
      amount: 500_000,
      currency: 'NGN',
      interval: 'month',
      metadata: { tier: 'starter' },
    },
    201,
  );
  const growth = await client.api(
    'POST',
    '/api/plans',
    {
      name: 'Growth (monthly)',
      amount: 2_500_000,
      currency: 'NGN',
      interval: 'month',
      metadata: { tier: 'growth' },
    },
    201,
  );
  const pro = await client.api(
    'POST',
    '/api/plans',
    {
      name: 'Pro (monthly)',
      amount: 2_900,
      currency: 'USD',
      interval: 'month',
      metadata: { tier: 'pro' },
    },
    201,
  );
  const team = await client.api(
    'POST',
    '/api/plans',
    {
      name: 'Team (yearly, 14-day trial)',
      amount: 29_000,
      currency: 'USD',
      interval: 'year',
      trial_period_days: 14,
      metadata: { tier: 'team' },
    },
    201,
  );

  const people = [
    {
      email: `adaeze.okafor@${DEMO_EMAIL_DOMAIN}`,
      name: 'Adaeze Okafor',
      phone: '+2348031234567',
      plan: starter,
      country: 'NG',
    },
    {
      email: `tunde.bakare@${DEMO_EMAIL_DOMAIN}`,
      name: 'Tunde Bakare',
      phone: '+2348059876543',
      plan: growth,
      country: 'NG',
    },
    {
      email: `grace.hopper@${DEMO_EMAIL_DOMAIN}`,
      name: 'Grace Hopper',
      phone: '+14155550101',
      plan: pro,
      country: 'US',
    },
    {
      email: `linus.pauling@${DEMO_EMAIL_DOMAIN}`,
      name: 'Linus Pauling',
      phone: '+14155550123',
      plan: pro,
      country: 'US',
    },
    {
      email: `margaret.hamilton@${DEMO_EMAIL_DOMAIN}`,
      name: 'Margaret Hamilton',
      phone: '+16175550199',
      plan: team,
      country: 'US',
    },
    {
      email: `chinua.achebe@${DEMO_EMAIL_DOMAIN}`,
      name: 'Chinua Achebe',
      phone: '+2348021112233',
      plan: undefined,
      country: 'NG',
    },
  ];
  type Cast = (typeof people)[number] & { customer: Resource; subscription?: Resource };
  const customers: Cast[] = [];
  for (const person of people) {
    const customer = await client.api(
      'POST',
      '/api/customers',
      {
        email: person.email,
        name: person.name,
        phone: person.phone,
        metadata: { country: person.country, source: 'billing demo' },
      },
      201,
    );
    const subscription = person.plan
      ? await client.api('POST', '/api/subscriptions', { customer_id: customer.id, plan_id: person.plan.id }, 201)
      : undefined;
    customers.push({ ...person, customer, subscription });
  }
  const [adaeze, tunde, grace, linus] = customers as [Cast, Cast, Cast, Cast];
  const ids = (c: Cast) => ({ customer_id: c.customer.id, subscription_id: c.subscription!.id });
  const names = (c: Cast) => c.name.split(' ') as [string, string];

  // Paystack: two first payments (their subscriptions become active), then a partial refund.
  const adaezeReference = providerId('T');
  await client.paystack(
    paystackCharge({
      reference: adaezeReference,
      amount: 500_000,
      email: adaeze.email,
      name: names(adaeze),
      metadata: ids(adaeze),
      paidAt: at(50),
    }),
  );
  await client.paystack(
    paystackCharge({
      reference: providerId('T'),
      amount: 2_500_000,
      email: tunde.email,
      name: names(tunde),
      metadata: ids(tunde),
      paidAt: at(45),
    }),
  );
  await client.paystack({
    event: 'refund.processed',
    data: {
      status: 'processed',
      transaction_reference: adaezeReference,
      refund_reference: providerId('RF'),
      amount: '100000',
      currency: 'NGN',
      processor: 'mpgs_zen',
      customer: { first_name: 'Adaeze', last_name: 'Okafor', email: adaeze.email },
      domain: 'test',
    },
  });

  // Stripe: two first payments. Linus then pauses and comes back: his new period's invoice
  // is issued at once and his card is declined on it → past_due, and a dunning case chases it.
  await client.stripe(
    stripePaymentIntentEvent('payment_intent.succeeded', {
      amount: 2_900,
      email: grace.email,
      metadata: ids(grace),
      at: at(40),
    }),
  );
  await client.stripe(
    stripePaymentIntentEvent('payment_intent.succeeded', {
      amount: 2_900,
      email: linus.email,
      metadata: ids(linus),
      at: at(35),
    }),
  );
  const linusSubscription = linus.subscription!.id;
  await client.api('PUT', `/api/subscriptions/${linusSubscription}/pause`);
  await client.api('PUT', `/api/subscriptions/${linusSubscription}/resume`);
  await renewNow(deps, linusSubscription);
  type Invoice = Story['invoice'];
  const open = await client.api<{ data: Invoice[] }>(
    'GET',
    `/api/invoices?subscription_id=${linusSubscription}&status=open`,
  );
  const invoice = open.data[0];
  if (!invoice) throw new DemoStepError(`Linus's renewal invoice was not issued after his resume`);
  await client.stripe(
    stripePaymentIntentEvent('payment_intent.payment_failed', {
      amount: invoice.amount_remaining,
      email: linus.email,
      metadata: { ...ids(linus), invoice_id: invoice.id },
      at: new Date(),
      error: 'Your card has insufficient funds.',
    }),
  );
  const cases = await client.api<{ data: (Resource & { subscription_id: string; invoice_id: string | null })[] }>(
    'GET',
    '/api/dunning/cases?sort_by=created_at&sort_order=desc&limit=10',
  );
  const dunningCase = cases.data.find((c) => c.subscription_id === linusSubscription);
  if (!dunningCase || dunningCase.invoice_id !== invoice.id) {
    throw new DemoStepError(`the declined payment opened no dunning case for invoice ${invoice.id}`);
  }
  return {
    invoice,
    dunningCase,
    savedMethodCustomer: adaeze.customer,
    customerIds: customers.map((c) => c.customer.id),
  };
}

/**
 * The story's own payments (the user's data is not counted), as the demo's check that its
 * provider events landed: 5 payments (one failed), 1 of them refunded in part.
 */
async function countPayments(client: DemoClient, customerIds: string[]) {
  let payments = 0;
  let refunded = 0;
  for (const id of customerIds) {
    const list = await client.api<{ data: { status: string }[] }>('GET', `/api/payments?customer_id=${id}&limit=100`);
    payments += list.data.length;
    refunded += list.data.filter((p) => p.status === 'partially_refunded' || p.status === 'refunded').length;
  }
  return { payments, refunded };
}

/**
 * `billing demo` with the process's configuration: checks the provider secrets (exit 78
 * with how to set them); refuses (exit 1, untouched) a database that has the demo's data
 * already or provider events it did not send; else migrates it and tells the story beside
 * the user's data, printing the ids a newcomer needs next. Resolves with the exit code.
 */
export async function runDemo(config: Readonly<Config>, io: DemoIo): Promise<number> {
  if (!config.paystackSecretKey || !config.stripeWebhookSecret) {
    const missing = [
      config.paystackSecretKey ? undefined : 'PAYSTACK_SECRET_KEY',
      config.stripeWebhookSecret ? undefined : 'STRIPE_WEBHOOK_SECRET',
    ].filter(Boolean);
    io.stderr.write(`${missing.join(' and ')} ${missing.length > 1 ? 'are' : 'is'} not set.\n\n${MISSING_SECRETS}`);
    return DEMO_EXIT.config;
  }
  const refused = await refusal(config);
  if (refused) {
    io.stderr.write(`billing demo refused: ${refused}`);
    return DEMO_EXIT.refused;
  }
  // A bootstrap key only this process knows: nothing to clean up, nothing left in `keys list`.
  const demoKey = `demo_${randomBytes(24).toString('base64url')}`;
  const demoConfig: Readonly<Config> = {
    ...config,
    apiKeys: [...config.apiKeys, demoKey],
    logLevel: 'silent',
    rateLimitMax: 0,
  };
  const [{ createDeps }, { buildApp }] = await Promise.all([import('../deps.ts'), import('../app.ts')]);
  const deps = await createDeps(demoConfig);
  try {
    const app = await buildApp(deps);
    try {
      const client = new DemoClient(app, demoKey, demoConfig);
      const story = await tellStory(client, deps);
      const landed = await countPayments(client, story.customerIds);
      if (landed.payments < 5 || landed.refunded < 1) {
        throw new DemoStepError(
          `the provider events did not all land (${landed.payments} payments, ${landed.refunded} refunded); ` +
            `the service's log and GET /api/provider-events tell why`,
        );
      }
      const base = `http://${['0.0.0.0', '::'].includes(config.host) ? '127.0.0.1' : config.host}:${config.port}`;
      io.stdout.write(
        `Demo data created beside yours (customers under @${DEMO_EMAIL_DOMAIN}):
  4 plans, ${story.customerIds.length} customers, 5 subscriptions, ${landed.payments} payments (one declined), ${landed.refunded} refund, 1 dunning case
  (the Paystack and Stripe events went through POST /api/notify, signed with your secrets)

  open invoice to pay:   ${story.invoice.id}  ${story.invoice.hosted_invoice_url}
  its dunning case:      ${story.dunningCase.id}
  saved payment method:  customer ${story.savedMethodCustomer.id}

Look around with a key (npm start must be running on the same DATABASE_URL):
  KEY=$(npx billing keys create --name me)
  curl -s "${base}/api/invoices/${story.invoice.id}" -H "Authorization: Bearer $KEY"
  curl -s "${base}/api/dunning/cases/${story.dunningCase.id}" -H "Authorization: Bearer $KEY"
  curl -s "${base}/api/customers/${story.savedMethodCustomer.id}/payment-methods" -H "Authorization: Bearer $KEY"
or open ${base}/docs
`,
      );
      return DEMO_EXIT.ok;
    } finally {
      await app.close();
    }
  } catch (error) {
    if (error instanceof DemoStepError) {
      io.stderr.write(`billing demo stopped: ${error.message}\n`);
      return DEMO_EXIT.refused;
    }
    throw error;
  } finally {
    await deps.close();
  }
}
