// `billing demo`, run as a real process on a new database of the pass's
// kind: a SQLite file, or a PostgreSQL database of its own (the CLI takes its database from
// DATABASE_URL only, so a per-test schema cannot be used; a fresh database can).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHmac, randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, type TestContext, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { buildApp } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { createDeps } from '../src/deps.ts';
import { ON_POSTGRES, TEST_DATABASE_URL } from './helpers/database.ts';
import { SHARED_SCHEMA_COMPILERS } from './helpers/schema-compilers.ts';

const BIN = fileURLToPath(new URL('../bin/billing.js', import.meta.url));
const KEY = 'demo_test_admin_key_0123456789';
const SECRETS = {
  PAYSTACK_SECRET_KEY: 'sk_test_demo_0123456789abcdef',
  STRIPE_WEBHOOK_SECRET: 'whsec_demo_0123456789',
  DATA_ENCRYPTION_KEY: 'k6tQ5fO1JrZ8mH3sV2yW9xA4bC7dE0gI1jL2nP3qR4s=',
};

interface Database {
  url: string;
  /** Whether the database holds any table yet. */
  hasTables(): Promise<boolean>;
}

/** A new, empty database for one test, dropped after it. */
async function emptyDatabase(t: TestContext): Promise<Database> {
  if (!ON_POSTGRES) {
    const dir = mkdtempSync(join(tmpdir(), 'billing-demo-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const path = join(dir, 'billing.db');
    return { url: `sqlite:${path}`, hasTables: async () => existsSync(path) };
  }
  const name = `billing_demo_${randomBytes(6).toString('hex')}`;
  const admin = async (text: string) => {
    const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
    await client.connect();
    try {
      return await client.query(text);
    } finally {
      await client.end();
    }
  };
  await admin(`create database ${name}`);
  const url = new URL(TEST_DATABASE_URL);
  url.pathname = `/${name}`;
  t.after(() => admin(`drop database if exists ${name} with (force)`));
  return {
    url: url.toString(),
    async hasTables() {
      const client = new pg.Client({ connectionString: url.toString() });
      await client.connect();
      try {
        const result = await client.query(`select count(*)::int as n from pg_tables where schemaname = 'public'`);
        return result.rows[0].n > 0;
      } finally {
        await client.end();
      }
    },
  };
}

/** Runs `billing …args` as a real process with only `env` (plus PATH), in a temp directory. */
function billing(t: TestContext, args: string[], env: Record<string, string>) {
  const cwd = mkdtempSync(join(tmpdir(), 'billing-demo-cwd-'));
  t.after(() => rmSync(cwd, { recursive: true, force: true }));
  const cache = process.env.NODE_COMPILE_CACHE;
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      cwd,
      env: { PATH: process.env.PATH ?? '', ...(cache ? { NODE_COMPILE_CACHE: cache } : {}), ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** The API over `databaseUrl` (what `npm start` would serve), on a real port; stopped after the test. */
async function api(t: TestContext, databaseUrl: string) {
  const deps = await createDeps(
    loadConfig({ DATABASE_URL: databaseUrl, API_KEYS: KEY, LOG_LEVEL: 'silent', RATE_LIMIT_MAX: '0' }),
  );
  const app = await buildApp(deps, { schemaController: SHARED_SCHEMA_COMPILERS });
  await app.listen({ port: 0, host: '127.0.0.1' });
  t.after(async () => {
    await app.close();
    await deps.close();
  });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  /** GET (or POST `body`) with the admin key; asserts 200 (201 for a POST) and returns the JSON. */
  return async (path: string, body?: unknown) => {
    const res = await fetch(`http://127.0.0.1:${port}${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    assert.equal(res.status, body === undefined ? 200 : 201, `${path}: ${res.status}`);
    return (await res.json()) as any;
  };
}

/** Every list's total (the dunning list says `total`), to show nothing changed. */
async function totals(get: Awaited<ReturnType<typeof api>>) {
  const paths = [
    'customers',
    'plans',
    'subscriptions',
    'payments',
    'refunds',
    'events',
    'webhooks',
    'api-keys',
    'provider-events',
  ];
  const result: Record<string, number> = {};
  for (const path of paths) result[path] = (await get(`/api/${path}`)).meta.total;
  result.dunning = (await get('/api/dunning/cases?status=all')).total;
  return result;
}

describe('billing demo', { concurrency: true }, () => {
  test('fills a new database through /api/notify: every list populated; a second run refuses and changes nothing', async (t) => {
    const database = await emptyDatabase(t);
    const env = { DATABASE_URL: database.url, LOG_LEVEL: 'silent', ...SECRETS };
    const run = await billing(t, ['demo'], env);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /Demo data created/);

    const get = await api(t, database.url);
    const customers = await get('/api/customers?limit=100');
    assert.ok(customers.meta.total >= 3, 'customers');
    assert.ok((await get('/api/plans')).meta.total >= 2, 'plans');
    const subscriptions = (await get('/api/subscriptions?limit=100')).data as { status: string }[];
    const statuses = new Set(subscriptions.map((s) => s.status));
    for (const status of ['active', 'past_due']) assert.ok(statuses.has(status), `a ${status} subscription`);

    const payments = (await get('/api/payments?limit=100')).data as {
      provider: string;
      status: string;
      customer_id: string | null;
      subscription_id: string | null;
    }[];
    assert.deepEqual([...new Set(payments.map((p) => p.provider))].sort(), ['paystack', 'stripe']);
    assert.ok(
      payments.some((p) => p.status === 'failed'),
      'a failed payment',
    );
    assert.ok(
      payments.some((p) => p.status === 'partially_refunded' || p.status === 'refunded'),
      'a refunded payment',
    );
    assert.ok(
      payments.every((p) => p.customer_id && p.subscription_id),
      'every payment is attributed',
    );
    const refunds = await get('/api/refunds');
    assert.ok(refunds.meta.total >= 1, 'refunds');

    const cases = await get('/api/dunning/cases');
    assert.ok(cases.total >= 1, 'an open dunning case');
    assert.equal(cases.data[0].reason, 'payment_failed');
    const open = (await get('/api/invoices?status=open')).data as { id: string; hosted_invoice_url: string }[];
    assert.equal(open.length, 1, 'one open invoice to pay');
    assert.equal(cases.data[0].invoice_id, open[0]!.id, 'the dunning case chases the open invoice');
    assert.ok(run.stdout.includes(open[0]!.hosted_invoice_url), 'the invoice page link is printed');
    assert.ok(run.stdout.includes(cases.data[0].id), 'the case id is printed');
    const saved = /saved payment method:\s+customer (cus_\w+)/.exec(run.stdout)?.[1];
    assert.ok(saved, run.stdout);
    assert.ok((await get(`/api/customers/${saved}/payment-methods`)).meta.total >= 1, 'a saved payment method');
    assert.ok((await get('/api/dunning/past-due')).total >= 1, 'past-due list');

    for (const provider of ['paystack', 'stripe']) {
      const events = await get(`/api/provider-events?provider=${provider}&status=processed`);
      assert.ok(events.meta.total >= 2, `processed ${provider} events in the provider-event inbox`);
    }

    const topics = new Set(((await get('/api/events?limit=100')).data as { topic: string }[]).map((e) => e.topic));
    for (const topic of [
      'customer.created',
      'payment.succeeded',
      'payment.failed',
      'payment.refunded',
      'dunning.started',
    ]) {
      assert.ok(topics.has(topic), `event ${topic}`);
    }
    assert.equal((await get('/api/api-keys')).meta.total, 0, 'the demo leaves no API key behind');

    const before = await totals(get);
    const again = await billing(t, ['demo'], env);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /demo's data is already in this database .*; nothing was changed/);
    assert.equal(again.stdout, '');
    assert.deepEqual(await totals(get), before, 'nothing changed');
  });

  test('without the provider secrets it says how to set them (exit 78) and touches no database', async (t) => {
    const database = await emptyDatabase(t);
    const cases: Record<string, string>[] = [
      {},
      { PAYSTACK_SECRET_KEY: SECRETS.PAYSTACK_SECRET_KEY, DATA_ENCRYPTION_KEY: SECRETS.DATA_ENCRYPTION_KEY },
      { STRIPE_WEBHOOK_SECRET: SECRETS.STRIPE_WEBHOOK_SECRET },
    ];
    for (const env of cases) {
      const run = await billing(t, ['demo'], { DATABASE_URL: database.url, ...env });
      assert.equal(run.code, 78, run.stderr);
      assert.equal(run.stdout, '');
      for (const name of ['PAYSTACK_SECRET_KEY', 'STRIPE_WEBHOOK_SECRET']) {
        const missing = !(name in env);
        assert.equal(new RegExp(`^[^\\n]*${name}`).test(run.stderr), missing, `first line names ${name} iff missing`);
        assert.match(run.stderr, new RegExp(`export ${name}=`), 'shows how to set it');
      }
    }
    assert.equal(await database.hasTables(), false, 'no database was created or migrated');
  });

  test("works beside the user's own customer, whose email it does not take", async (t) => {
    const database = await emptyDatabase(t);
    const get = await api(t, database.url);
    const own = await get('/api/customers', { email: 'ada@example.com', name: 'Ada Lovelace' });
    const run = await billing(t, ['demo'], { DATABASE_URL: database.url, ...SECRETS });
    assert.equal(run.code, 0, run.stderr);
    const customers = (await get('/api/customers?limit=100')).data as { id: string; email: string }[];
    assert.equal(customers.length, 7);
    assert.deepEqual(
      customers.filter((c) => !c.email.endsWith('@demo.example')).map((c) => c.id),
      [own.id],
      "every other customer is the demo's",
    );
    assert.equal((await get(`/api/customers/${own.id}`)).email, 'ada@example.com');
  });

  test('a database that has received provider events it did not send is refused and left as it was', async (t) => {
    const database = await emptyDatabase(t);
    const get = await api(t, database.url);
    await get('/api/customers', { email: 'only@example.com', name: 'Only Customer' });
    // A real Paystack event, as a live database receives one (signed with its secret).
    const deps = await createDeps(
      loadConfig({ DATABASE_URL: database.url, LOG_LEVEL: 'silent', ...SECRETS, API_KEYS: KEY }),
    );
    const app = await buildApp(deps, { schemaController: SHARED_SCHEMA_COMPILERS });
    try {
      const body = JSON.stringify({
        event: 'charge.success',
        data: { id: 1, reference: 'live_ref_1', status: 'success', amount: 5000, currency: 'NGN', metadata: {} },
      });
      const signature = createHmac('sha512', SECRETS.PAYSTACK_SECRET_KEY).update(body).digest('hex');
      const res = await app.inject({
        method: 'POST',
        url: '/api/notify?p=paystack',
        headers: { 'content-type': 'application/json', 'x-paystack-signature': signature },
        payload: body,
      });
      assert.equal(res.statusCode, 200, res.body);
    } finally {
      await app.close();
      await deps.close();
    }
    const before = await totals(get);
    assert.equal(before['provider-events'], 1);
    const run = await billing(t, ['demo'], { DATABASE_URL: database.url, ...SECRETS });
    assert.equal(run.code, 1);
    assert.match(run.stderr, /received Paystack or Stripe events the demo did not send.*nothing was changed/);
    assert.equal(run.stdout, '');
    assert.deepEqual(await totals(get), before);
  });
});
