// Bench scenario for usage-based billing (SPEC §15, docs/performance.md), on SQLite and
// PostgreSQL, each figure beside a floor measured in the same run:
//   - ingestion: events/s through POST /api/usage-events in batches of 100 (BENCH_USAGE_BATCHES
//     batches, BENCH_USAGE_CONCURRENCY requests in flight) against the API in a child process
//     (no worker); the floor is the same three multi-row writes per batch (event keys, events,
//     per-minute rollups) done raw with node:sqlite / pg, one transaction per batch. Target
//     ≥ 20,000 events/s per instance.
//   - read: p99 of GET /api/customers/{id}/usage of one customer with BENCH_USAGE_EVENTS events
//     in the current period (default 1,000,000 on SQLite, 100,000 on PostgreSQL via
//     BENCH_USAGE_PG_EVENTS), sequential requests. Target ≤ 20 ms.
//   - renewal: the renewal invoice of that customer (its metered charge graduated), issued by
//     the worker's job in this process with the clock moved to the period end. Target ≤ 50 ms.
// PostgreSQL runs on a fresh database `billing_usage_bench_<pid>` at BENCH_PG_URL and is
// skipped, with a note, when it does not answer. Measures; never fails on speed.
// Alone: `node bench/usage.ts`.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import pg from 'pg';
import { applySuccessfulPayment } from '../src/billing/subscription-payments.ts';
import { createSubscription } from '../src/billing/subscriptions.ts';
import { loadConfig } from '../src/config.ts';
import { createDeps, type Deps } from '../src/deps.ts';
import { createCustomer } from '../src/modules/customers/customers.service.ts';
import { createMeter } from '../src/modules/meters/meters.service.ts';
import { createPlan } from '../src/modules/plans/plans.service.ts';
import { ingestUsageEvents } from '../src/modules/usage/usage.ingest.ts';
import { ManualClock } from '../src/shared/clock.ts';
import { newId } from '../src/shared/ids.ts';
import { issueRenewalInvoices } from '../src/worker/subscriptions.jobs.ts';
import { adminQuery } from './postgres.ts';
import { type RunningServer, startServer } from './servers.ts';

const ROOT = resolve(import.meta.dirname, '..');
const API_KEY = 'bench_bootstrap_key_0123456789';
const DEFAULT_SERVER_URL = 'postgres://postgres@127.0.0.1:5432/postgres';
const BATCH = 100;
/** Targets (docs/performance.md). */
export const TARGETS = { eventsPerSecond: 20_000, usageP99Ms: 20, renewalMs: 50 };
/** Where the metered customer's period starts (a fixed month: the clock is ours). */
const PERIOD_START = '2026-01-01T00:00:00.000Z';
const PERIOD_END = '2026-02-01T00:00:00.000Z';
const DAY = 24 * 60 * 60 * 1000;

export interface UsageBenchSettings {
  /** Batches of 100 events for ingestion (and as many for its floor). */
  batches: number;
  concurrency: number;
  /** Events of the metered customer, per database. */
  sqliteEvents: number;
  postgresEvents: number;
  /** GET /api/customers/{id}/usage requests measured. */
  reads: number;
}

export interface UsageFigures {
  database: 'sqlite' | 'postgres';
  eventsPerSecond: number;
  floorEventsPerSecond: number;
  events: number;
  usageP50Ms: number;
  usageP99Ms: number;
  renewalMs: number;
}

const count = (n: number) => Math.round(n).toLocaleString('en-US');
const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;

/** One ingestion batch of `customerId` (transaction ids `prefix-i-j`), timestamps around now. */
function batchOf(customerId: string, prefix: string, i: number, now: number) {
  return Array.from({ length: BATCH }, (_, j) => ({
    transaction_id: `${prefix}-${i}-${j}`,
    customer_id: customerId,
    event_name: 'tokens_used',
    timestamp: new Date(now - ((i * BATCH + j) % 3_600) * 1000).toISOString(),
    properties: { tokens: (j % 50) + 1 },
  }));
}

/** Runs `tasks` with `concurrency` in flight; returns the seconds taken. */
async function timed(tasks: number, concurrency: number, run: (i: number) => Promise<void>): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: Math.min(concurrency, tasks) }, async () => {
      while (next < tasks) await run(next++);
    }),
  );
  return (performance.now() - started) / 1000;
}

/** The raw rows of a batch: what the store writes, minus its checks and its decimal rules. */
function rawRows(meterId: string, events: ReturnType<typeof batchOf>, receivedAt: string) {
  const keys = events.map((e) => [e.customer_id, e.transaction_id, receivedAt]);
  const rows = events.map((e) => [
    newId('usageEvent'),
    e.customer_id,
    meterId,
    e.event_name,
    e.transaction_id,
    e.timestamp,
    receivedAt,
    String(e.properties.tokens),
    JSON.stringify(e.properties),
  ]);
  const byMinute = new Map<string, unknown[]>();
  for (const e of events) {
    const bucket = `${e.timestamp.slice(0, 16)}:00.000Z`;
    byMinute.set(bucket, [
      e.customer_id,
      meterId,
      bucket,
      1,
      String(e.properties.tokens),
      String(e.properties.tokens),
      e.timestamp,
      e.transaction_id,
      String(e.properties.tokens),
    ]);
  }
  return { keys, rows, rollups: [...byMinute.values()] };
}

/** `INSERT … VALUES (…), (…)` text with `rows × width` placeholders ($n on PostgreSQL, ? on SQLite). */
function valuesText(rows: number, width: number, dollar: boolean): string {
  let n = 0;
  const one = () => `(${Array.from({ length: width }, () => (dollar ? `$${++n}` : '?')).join(', ')})`;
  return Array.from({ length: rows }, one).join(', ');
}

const ROLLUP_COLUMNS =
  'customer_id, meter_id, bucket, event_count, value_sum, value_max, last_timestamp, last_transaction_id, last_value';

function rawStatements(keys: number, rows: number, rollups: number, dollar: boolean) {
  return {
    keys: `insert into usage_event_keys (customer_id, transaction_id, received_at) values ${valuesText(keys, 3, dollar)} on conflict do nothing`,
    events: `insert into usage_events (id, customer_id, meter_id, event_name, transaction_id, timestamp, received_at, value, properties) values ${valuesText(rows, 9, dollar)}`,
    rollups: `insert into usage_rollups (${ROLLUP_COLUMNS}) values ${valuesText(rollups, 9, dollar)} on conflict (customer_id, meter_id, bucket) do update set event_count = usage_rollups.event_count + excluded.event_count`,
  };
}

interface World {
  deps: Deps;
  clock: ManualClock;
  meterId: string;
  /** Ingestion's customers (one per request in flight) and the floor's. */
  ingestCustomers: string[];
  floorCustomers: string[];
  /** The metered customer and its subscription. */
  customerId: string;
  subscriptionId: string;
}

/** Meter, graduated plan, customers, and the metered customer's `events` events in its period. */
async function seed(deps: Deps, clock: ManualClock, settings: UsageBenchSettings, events: number): Promise<World> {
  const meter = await createMeter(deps.db, clock, {
    event_name: 'tokens_used',
    aggregation: 'sum',
    value_property: 'tokens',
    display_name: 'Tokens',
  });
  const plan = await createPlan(deps.db, clock, {
    name: 'Metered',
    amount: 5000,
    currency: 'USD',
    interval: 'month',
    charges: [
      {
        meter_id: meter.id,
        model: 'graduated',
        tiers: [
          { up_to: 1_000, unit_amount: 0 },
          { up_to: 100_000, unit_amount_decimal: '0.4' },
          { up_to: null, unit_amount_decimal: '0.01' },
        ],
      },
    ],
  });
  const customers = async (n: number, tag: string) => {
    const ids: string[] = [];
    for (let i = 0; i < n; i++)
      ids.push((await createCustomer(deps.db, clock, { email: `${tag}${i}@example.com` })).id);
    return ids;
  };
  const ingestCustomers = await customers(settings.concurrency, 'ingest');
  const floorCustomers = await customers(settings.concurrency, 'floor');
  const [customerId] = await customers(1, 'metered');
  const subscription = await createSubscription(deps.db, deps, { customer_id: customerId!, plan_id: plan.id });
  await deps.db.transaction().execute((trx) => applySuccessfulPayment(trx, deps, subscription.id));
  // The period's events, spread over its first 30 days; the clock stands at day 30 so none is
  // in the future and none older than the ingestion window.
  clock.set(new Date(Date.parse(PERIOD_START) + 30 * DAY));
  const span = 30 * DAY;
  for (let done = 0; done < events; done += 1_000) {
    const size = Math.min(1_000, events - done);
    const batch = Array.from({ length: size }, (_, j) => ({
      transaction_id: `seed-${done + j}`,
      customer_id: customerId,
      event_name: 'tokens_used',
      timestamp: new Date(Date.parse(PERIOD_START) + Math.floor(((done + j) * span) / events)).toISOString(),
      properties: { tokens: ((done + j) % 7) + 1 },
    }));
    const results = await ingestUsageEvents(deps.db, clock, batch);
    const refused = results.find((r) => r.status !== 'accepted');
    if (refused) throw new Error(`usage bench: a seeded event was not accepted: ${JSON.stringify(refused)}`);
  }
  return {
    deps,
    clock,
    meterId: meter.id,
    ingestCustomers,
    floorCustomers,
    customerId: customerId!,
    subscriptionId: subscription.id,
  };
}

/** Posts `batches` batches of 100 events; throws unless every event is accepted. */
async function ingestHttp(app: RunningServer, world: World, settings: UsageBenchSettings): Promise<number> {
  const now = Date.now();
  const seconds = await timed(settings.batches, settings.concurrency, async (i) => {
    const customer = world.ingestCustomers[i % world.ingestCustomers.length]!;
    const response = await fetch(`${app.url}/api/usage-events`, {
      method: 'POST',
      headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ events: batchOf(customer, 'http', i, now) }),
    });
    const body = (await response.json()) as { accepted?: number };
    if (response.status !== 202 || body.accepted !== BATCH) {
      throw new Error(`POST /api/usage-events answered ${response.status} ${JSON.stringify(body).slice(0, 200)}`);
    }
  });
  return (settings.batches * BATCH) / seconds;
}

/** The floor on SQLite: the same three multi-row statements per batch, raw node:sqlite. */
function floorSqlite(path: string, world: World, settings: UsageBenchSettings): number {
  const db = new DatabaseSync(path);
  db.exec('PRAGMA busy_timeout = 5000');
  db.exec('PRAGMA synchronous = FULL');
  const now = Date.now();
  const receivedAt = new Date(now).toISOString();
  const started = performance.now();
  for (let i = 0; i < settings.batches; i++) {
    const customer = world.floorCustomers[i % world.floorCustomers.length]!;
    const { keys, rows, rollups } = rawRows(world.meterId, batchOf(customer, 'raw', i, now), receivedAt);
    const text = rawStatements(keys.length, rows.length, rollups.length, false);
    db.exec('BEGIN IMMEDIATE');
    db.prepare(text.keys).run(...(keys.flat() as string[]));
    db.prepare(text.events).run(...(rows.flat() as string[]));
    db.prepare(text.rollups).run(...(rollups.flat() as string[]));
    db.exec('COMMIT');
  }
  const seconds = (performance.now() - started) / 1000;
  db.close();
  return (settings.batches * BATCH) / seconds;
}

/** The floor on PostgreSQL: the same statements, raw pg, `concurrency` clients. */
async function floorPostgres(url: string, world: World, settings: UsageBenchSettings): Promise<number> {
  const pool = new pg.Pool({ connectionString: url, max: settings.concurrency });
  const now = Date.now();
  const receivedAt = new Date(now).toISOString();
  try {
    const seconds = await timed(settings.batches, settings.concurrency, async (i) => {
      const customer = world.floorCustomers[i % world.floorCustomers.length]!;
      const { keys, rows, rollups } = rawRows(world.meterId, batchOf(customer, 'raw', i, now), receivedAt);
      const text = rawStatements(keys.length, rows.length, rollups.length, true);
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        await client.query(text.keys, keys.flat());
        await client.query(text.events, rows.flat());
        await client.query(text.rollups, rollups.flat());
        await client.query('COMMIT');
      } finally {
        client.release();
      }
    });
    return (settings.batches * BATCH) / seconds;
  } finally {
    await pool.end();
  }
}

/** Sequential GETs of the metered customer's usage; sorted latencies (ms). */
async function readLatencies(app: RunningServer, world: World, reads: number): Promise<number[]> {
  const url = `${app.url}/api/customers/${world.customerId}/usage`;
  const once = async () => {
    const started = performance.now();
    const response = await fetch(url, { headers: { authorization: `Bearer ${API_KEY}` } });
    const body = (await response.json()) as { data?: { period_start?: string }[] };
    if (response.status !== 200 || body.data?.[0]?.period_start !== PERIOD_START) {
      throw new Error(`GET ${url} answered ${response.status} ${JSON.stringify(body).slice(0, 200)}`);
    }
    return performance.now() - started;
  };
  for (let i = 0; i < Math.min(20, reads); i++) await once();
  const times: number[] = [];
  for (let i = 0; i < reads; i++) times.push(await once());
  return times.sort((a, b) => a - b);
}

/** The metered customer's renewal, issued by the worker's job at the period end (ms). */
async function renewal(world: World): Promise<number> {
  world.clock.set(new Date(PERIOD_END));
  const started = performance.now();
  const issued = await issueRenewalInvoices.run(world.deps);
  const ms = performance.now() - started;
  const invoice = await world.deps.db
    .selectFrom('invoices')
    .select(['total'])
    .where('subscription_id', '=', world.subscriptionId)
    .where('period_start', '=', PERIOD_END)
    .executeTakeFirst();
  if (issued < 1 || !invoice) throw new Error('usage bench: the renewal invoice was not issued');
  return ms;
}

async function runOn(
  database: 'sqlite' | 'postgres',
  databaseUrl: string,
  settings: UsageBenchSettings,
  log: (line: string) => void,
): Promise<UsageFigures> {
  const events = database === 'sqlite' ? settings.sqliteEvents : settings.postgresEvents;
  const clock = new ManualClock(new Date(PERIOD_START));
  const config = loadConfig({ DATABASE_URL: databaseUrl, API_KEYS: API_KEY, LOG_LEVEL: 'silent' });
  const deps = await createDeps(config, { clock });
  let app: RunningServer | undefined;
  try {
    const seedStarted = performance.now();
    const world = await seed(deps, clock, settings, events);
    log(`  ${database}: seeded ${count(events)} events in ${((performance.now() - seedStarted) / 1000).toFixed(1)} s`);
    app = await startServer(
      join(ROOT, 'bench/api-only-server.ts'),
      { DATABASE_URL: databaseUrl, API_KEYS: API_KEY, LOG_LEVEL: 'warn', RATE_LIMIT_MAX: '0' },
      '/api/health',
    );
    const eventsPerSecond = await ingestHttp(app, world, settings);
    const floorEventsPerSecond =
      database === 'sqlite'
        ? floorSqlite(databaseUrl.slice('sqlite:'.length), world, settings)
        : await floorPostgres(databaseUrl, world, settings);
    const latencies = await readLatencies(app, world, settings.reads);
    await app.stop();
    app = undefined;
    const renewalMs = await renewal(world);
    const figures: UsageFigures = {
      database,
      eventsPerSecond,
      floorEventsPerSecond,
      events,
      usageP50Ms: percentile(latencies, 0.5),
      usageP99Ms: percentile(latencies, 0.99),
      renewalMs,
    };
    const met = (ok: boolean) => (ok ? 'met' : 'NOT met');
    log(
      `  ${database}: ingestion ${count(eventsPerSecond)} events/s (batches of ${BATCH}, ${settings.concurrency} in flight) ` +
        `vs raw floor ${count(floorEventsPerSecond)} events/s = ${(eventsPerSecond / floorEventsPerSecond).toFixed(2)}× ` +
        `(target ≥ ${count(TARGETS.eventsPerSecond)}: ${met(eventsPerSecond >= TARGETS.eventsPerSecond)})`,
    );
    log(
      `  ${database}: GET /api/customers/{id}/usage over ${count(events)} events: p50 ${figures.usageP50Ms.toFixed(2)} ms, ` +
        `p99 ${figures.usageP99Ms.toFixed(2)} ms over ${settings.reads} requests (target ≤ ${TARGETS.usageP99Ms} ms: ${met(figures.usageP99Ms <= TARGETS.usageP99Ms)})`,
    );
    log(
      `  ${database}: renewal invoice over ${count(events)} events: ${renewalMs.toFixed(1)} ms ` +
        `(target ≤ ${TARGETS.renewalMs} ms: ${met(renewalMs <= TARGETS.renewalMs)})`,
    );
    return figures;
  } finally {
    await app?.stop();
    await deps.close();
  }
}

/** Runs the usage scenarios on SQLite (a file in `workDir`) and, when it answers, PostgreSQL. */
export async function benchUsage(
  workDir: string,
  settings: UsageBenchSettings,
  log: (line: string) => void,
): Promise<UsageFigures[]> {
  log('\nusage (SPEC §15: ingestion beside raw multi-row writes, a period read, a renewal):');
  const figures = [await runOn('sqlite', `sqlite:${join(workDir, 'usage.db')}`, settings, log)];
  const serverUrl = process.env.BENCH_PG_URL ?? DEFAULT_SERVER_URL;
  const name = `billing_usage_bench_${process.pid}`;
  try {
    await adminQuery(serverUrl, `create database ${name}`);
  } catch (error) {
    log(`  postgres: skipped (${error instanceof Error ? error.message : String(error)})`);
    return figures;
  }
  try {
    const url = new URL(serverUrl);
    url.pathname = `/${name}`;
    figures.push(await runOn('postgres', url.toString(), settings, log));
  } finally {
    await adminQuery(serverUrl, `drop database if exists ${name} with (force)`);
  }
  return figures;
}

/** The settings from the environment; `smoke` gives the tiny sizes CI runs. */
export function usageBenchSettings(smoke: boolean): UsageBenchSettings {
  const number = (name: string, fallback: number) => {
    const text = process.env[name];
    const value = text === undefined || text.trim() === '' ? fallback : Number(text);
    if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a whole number ≥ 1 (got "${text}")`);
    return value;
  };
  return {
    batches: number('BENCH_USAGE_BATCHES', smoke ? 10 : 500),
    concurrency: number('BENCH_USAGE_CONCURRENCY', smoke ? 2 : 8),
    sqliteEvents: number('BENCH_USAGE_EVENTS', smoke ? 200 : 1_000_000),
    postgresEvents: number('BENCH_USAGE_PG_EVENTS', smoke ? 200 : 100_000),
    reads: number('BENCH_USAGE_READS', smoke ? 20 : 500),
  };
}

if (import.meta.main) {
  const dir = mkdtempSync(join(tmpdir(), 'bench-usage-'));
  try {
    await benchUsage(dir, usageBenchSettings(process.env.BENCH_SMOKE === '1'), (line) =>
      process.stdout.write(`${line}\n`),
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
