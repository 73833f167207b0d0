// Bench scenario for usage-based billing (SPEC §15, docs/performance.md), on SQLite and
// PostgreSQL, each figure beside a floor measured in the same run, with CPU figures (the load
// average is printed: wall times on a shared machine are noisy):
//   - ingestion: events/s and the API's CPU µs/event through POST /api/usage-events in batches
//     of 100 (BENCH_USAGE_BATCHES batches, BENCH_USAGE_CONCURRENCY requests in flight) against
//     the API in a child process (no worker); the floor is the same writes per batch (event
//     keys, events, rollups per minute, hour and day) as raw multi-row statements with
//     node:sqlite / pg, one transaction per batch. Target ≥ 20,000 events/s per instance.
//   - read: p50/p99 and the API's CPU ms of GET /api/customers/{id}/usage of one customer with
//     BENCH_USAGE_EVENTS (SQLite) / BENCH_USAGE_PG_EVENTS (PostgreSQL) events in its current
//     period (default 1,000,000 each), sequential requests; the floor is GET /api/health (one
//     database round trip) in the same run. Target p99 ≤ 20 ms.
//   - renewal: the renewal invoice of that customer (its metered charge graduated), issued by
//     the worker's job in this process with the clock moved to the period end; the floor is
//     the store's aggregate of the period alone. Target ≤ 50 ms (with ≥ 1 M events).
// The metered customer's events are seeded by a bulk path (seedPeriod), not through the API.
// PostgreSQL runs on a fresh database `billing_usage_bench_<pid>` at BENCH_PG_URL and is
// skipped, with a note, when it does not answer. Measures; never fails on speed.
// Alone: `node bench/usage.ts`.
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { sql } from 'kysely';
import pg from 'pg';
import { applySuccessfulPayment } from '../src/billing/subscription-payments.ts';
import { createSubscription } from '../src/billing/subscriptions.ts';
import { loadConfig } from '../src/config.ts';
import { isPostgres } from '../src/db/column-types.ts';
import { createDeps, type Deps } from '../src/deps.ts';
import { createCustomer } from '../src/modules/customers/customers.service.ts';
import { createMeter } from '../src/modules/meters/meters.service.ts';
import { createPlan } from '../src/modules/plans/plans.service.ts';
import { ensureUsagePartitions } from '../src/modules/usage/usage.partitions.ts';
import { sqlUsageStore } from '../src/modules/usage/usage.store.ts';
import { ManualClock } from '../src/shared/clock.ts';
import { newId } from '../src/shared/ids.ts';
import { issueRenewalInvoices } from '../src/worker/subscriptions.jobs.ts';
import { adminQuery } from './postgres.ts';
import { type RunningServer, startServer, wholeNumberSetting } from './servers.ts';

const ROOT = resolve(import.meta.dirname, '..');
const API_KEY = 'bench_bootstrap_key_0123456789';
const DEFAULT_SERVER_URL = 'postgres://postgres@127.0.0.1:5432/postgres';
const BATCH = 100;
/** Targets (docs/performance.md). */
export const TARGETS = { eventsPerSecond: 20_000, usageP99Ms: 20, renewalMs: 50 };
/**
 * Where the metered customer's period starts (a fixed month: the clock is ours), at an instant
 * on no minute, hour or day boundary, as a subscription's anchor usually is: the read covers
 * whole days, hours and minutes and the partial minutes at its ends.
 */
const PERIOD_START = '2026-01-01T10:23:45.678Z';
const PERIOD_END = '2026-02-01T10:23:45.678Z';
/** The seeded events are spread over the period's first 30 days. */
const SEED_SPAN_MS = 30 * 24 * 60 * 60 * 1000;
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
  /** The API server's CPU µs per ingested event (undefined without /proc). */
  ingestCpuUsPerEvent: number | undefined;
  /** SQLite: the floor's CPU µs per event (in this process); PostgreSQL: undefined. */
  floorCpuUsPerEvent: number | undefined;
  events: number;
  usageP50Ms: number;
  usageP99Ms: number;
  usageCpuMs: number | undefined;
  /** GET /api/health (one database round trip) in the same run: the read's floor. */
  healthP50Ms: number;
  healthP99Ms: number;
  healthCpuMs: number | undefined;
  renewalMs: number;
  renewalCpuMs: number;
  /** The store's aggregate of the period alone: the renewal's floor. */
  aggregateMs: number;
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
  // One rollup row per minute, hour and day of the batch (last writer wins: a floor, not a sum).
  const rollups = [16, 13, 10].map((prefix) => {
    const byBucket = new Map<string, unknown[]>();
    for (const e of events) {
      const bucket = `${e.timestamp.slice(0, prefix)}${'0000-00-00T00:00:00.000Z'.slice(prefix)}`;
      byBucket.set(bucket, [
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
    return [...byBucket.values()];
  });
  return { keys, rows, rollups };
}

/** `INSERT … VALUES (…), (…)` text with `rows × width` placeholders ($n on PostgreSQL, ? on SQLite). */
function valuesText(rows: number, width: number, dollar: boolean): string {
  let n = 0;
  const one = () => `(${Array.from({ length: width }, () => (dollar ? `$${++n}` : '?')).join(', ')})`;
  return Array.from({ length: rows }, one).join(', ');
}

const ROLLUP_COLUMNS =
  'customer_id, meter_id, bucket, event_count, value_sum, value_max, last_timestamp, last_transaction_id, last_value';

const ROLLUP_TABLES = ['usage_rollups', 'usage_rollups_hourly', 'usage_rollups_daily'];

function rawStatements(keys: number, rows: number, rollups: number[], dollar: boolean) {
  return {
    keys: `insert into usage_event_keys (customer_id, transaction_id, received_at) values ${valuesText(keys, 3, dollar)} on conflict do nothing`,
    events: `insert into usage_events (id, customer_id, meter_id, event_name, transaction_id, timestamp, received_at, value, properties) values ${valuesText(rows, 9, dollar)}`,
    rollups: ROLLUP_TABLES.map(
      (table, i) =>
        `insert into ${table} (${ROLLUP_COLUMNS}) values ${valuesText(rollups[i]!, 9, dollar)} on conflict (customer_id, meter_id, bucket) do update set event_count = ${table}.event_count + excluded.event_count`,
    ),
  };
}

/** Events of the bulk seed per statement. */
const SEED_CHUNK = 500_000;

interface SeedRollup {
  bucket: number;
  count: number;
  sum: number;
  max: number;
  last: number;
}

/**
 * The seeded events' rollups per bucket of `size` ms: event i of `n` is at PERIOD_START + i ×
 * step (step = ⌊SEED_SPAN_MS / n⌋ ms, exact integers in SQL and here) with value (i mod 7) + 1,
 * so the rollups are computed from the formula, not by reading the events back.
 */
function seedRollups(n: number, size: number): SeedRollup[] {
  const start = Date.parse(PERIOD_START);
  const step = Math.floor(SEED_SPAN_MS / n);
  const out: SeedRollup[] = [];
  let current: SeedRollup | undefined;
  for (let i = 0; i < n; i++) {
    const bucket = Math.floor((start + i * step) / size) * size;
    const value = (i % 7) + 1;
    if (current?.bucket !== bucket) {
      current = { bucket, count: 0, sum: 0, max: 0, last: i };
      out.push(current);
    }
    current.count += 1;
    current.sum += value;
    current.max = Math.max(current.max, value);
    current.last = i;
  }
  return out;
}

/**
 * Seeds `n` events of the metered customer by a bulk path — not through the API, whose speed
 * is measured apart: their keys and events generated by the database itself (generate_series
 * on PostgreSQL, a recursive CTE on SQLite), SEED_CHUNK per statement, and their rollups per
 * minute, hour and day computed from the same formula (seedRollups) and inserted. Checks that
 * the store's aggregate of the period then equals the formula's total.
 */
export async function seedPeriod(deps: Deps, customerId: string, meterId: string, n: number, receivedAt: string) {
  const db = deps.db;
  const pg = isPostgres(db);
  const start = Date.parse(PERIOD_START);
  const step = Math.floor(SEED_SPAN_MS / n);
  await ensureUsagePartitions(db, [PERIOD_START, new Date(start + SEED_SPAN_MS).toISOString()]);
  for (let lo = 0; lo < n; lo += SEED_CHUNK) {
    const hi = Math.min(n, lo + SEED_CHUNK) - 1;
    if (pg) {
      await sql`insert into usage_event_keys (customer_id, transaction_id, received_at)
        select ${customerId}, 'seed-' || i, ${receivedAt}::timestamptz from generate_series(${lo}::bigint, ${hi}::bigint) as i`.execute(
        db,
      );
      await sql`insert into usage_events (id, customer_id, meter_id, event_name, transaction_id, "timestamp", received_at, value, properties)
        select 'uev_seed' || i, ${customerId}, ${meterId}, 'tokens_used', 'seed-' || i,
          ${PERIOD_START}::timestamptz + (i * ${step}::bigint) * interval '1 millisecond', ${receivedAt}::timestamptz,
          ((i % 7) + 1)::text, '{"tokens":' || ((i % 7) + 1) || '}'
        from generate_series(${lo}::bigint, ${hi}::bigint) as i`.execute(db);
    } else {
      const series = sql`with recursive s(i) as (select ${lo} union all select i + 1 from s where i < ${hi})`;
      await sql`${series} insert into usage_event_keys (customer_id, transaction_id, received_at)
        select ${customerId}, 'seed-' || i, ${receivedAt} from s`.execute(db);
      const ms = sql`(${start} + i * ${step})`;
      await sql`${series} insert into usage_events (id, customer_id, meter_id, event_name, transaction_id, "timestamp", received_at, value, properties)
        select 'uev_seed' || i, ${customerId}, ${meterId}, 'tokens_used', 'seed-' || i,
          strftime('%Y-%m-%dT%H:%M:%S', ${ms} / 1000, 'unixepoch') || '.' || printf('%03d', ${ms} % 1000) || 'Z', ${receivedAt},
          cast(i % 7 + 1 as text), '{"tokens":' || (i % 7 + 1) || '}'
        from s`.execute(db);
    }
  }
  const iso = (ms: number) => new Date(ms).toISOString();
  for (const [table, size] of [
    ['usage_rollups', 60_000],
    ['usage_rollups_hourly', 3_600_000],
    ['usage_rollups_daily', DAY],
  ] as const) {
    const rows = seedRollups(n, size).map((r) => ({
      customer_id: customerId,
      meter_id: meterId,
      bucket: iso(r.bucket),
      event_count: r.count,
      value_sum: String(r.sum),
      value_max: String(r.max),
      last_timestamp: iso(start + r.last * step),
      last_transaction_id: `seed-${r.last}`,
      last_value: String((r.last % 7) + 1),
    }));
    for (let i = 0; i < rows.length; i += 2_000)
      await db
        .insertInto(table)
        .values(rows.slice(i, i + 2_000))
        .execute();
  }
  if (pg)
    await sql`analyze usage_events, usage_event_keys, usage_rollups, usage_rollups_hourly, usage_rollups_daily`.execute(
      db,
    );
  const whole = Math.floor(n / 7);
  const rest = n % 7;
  const expected = String(28 * whole + (rest * (rest + 1)) / 2);
  const total = await sqlUsageStore.aggregate(db, {
    customer_id: customerId,
    meter: { id: meterId, aggregation: 'sum' },
    from: PERIOD_START,
    to: PERIOD_END,
  });
  if (total !== expected) throw new Error(`usage bench: the seeded period sums to ${total}, not ${expected}`);
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
  await seedPeriod(deps, customerId!, meter.id, events, clock.now().toISOString());
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
async function ingestHttp(
  app: RunningServer,
  world: World,
  settings: UsageBenchSettings,
): Promise<{ rate: number; cpuUsPerEvent: number | undefined }> {
  const now = Date.now();
  const cpuBefore = app.cpuSeconds();
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
  const cpuAfter = app.cpuSeconds();
  const total = settings.batches * BATCH;
  return {
    rate: total / seconds,
    cpuUsPerEvent:
      cpuBefore === undefined || cpuAfter === undefined ? undefined : ((cpuAfter - cpuBefore) * 1e6) / total,
  };
}

/**
 * The floor on SQLite: the same writes per batch as multi-row statements (keys, events, the
 * minute, hour and day rollups), raw node:sqlite, no checks. Events/s and CPU seconds used.
 */
function floorSqlite(path: string, world: World, settings: UsageBenchSettings): { rate: number; cpu: number } {
  const db = new DatabaseSync(path);
  db.exec('PRAGMA busy_timeout = 5000');
  db.exec('PRAGMA synchronous = FULL');
  const now = Date.now();
  const receivedAt = new Date(now).toISOString();
  const started = performance.now();
  const cpu = process.cpuUsage();
  for (let i = 0; i < settings.batches; i++) {
    const customer = world.floorCustomers[i % world.floorCustomers.length]!;
    const { keys, rows, rollups } = rawRows(world.meterId, batchOf(customer, 'raw', i, now), receivedAt);
    const text = rawStatements(
      keys.length,
      rows.length,
      rollups.map((r) => r.length),
      false,
    );
    db.exec('BEGIN IMMEDIATE');
    db.prepare(text.keys).run(...(keys.flat() as string[]));
    db.prepare(text.events).run(...(rows.flat() as string[]));
    text.rollups.forEach((statement, level) => db.prepare(statement).run(...(rollups[level]!.flat() as string[])));
    db.exec('COMMIT');
  }
  const used = process.cpuUsage(cpu);
  const seconds = (performance.now() - started) / 1000;
  db.close();
  return { rate: (settings.batches * BATCH) / seconds, cpu: (used.user + used.system) / 1e6 };
}

/** The floor on PostgreSQL: the same statements, raw pg, `concurrency` clients (one round trip each). */
async function floorPostgres(url: string, world: World, settings: UsageBenchSettings): Promise<number> {
  const pool = new pg.Pool({ connectionString: url, max: settings.concurrency });
  const now = Date.now();
  const receivedAt = new Date(now).toISOString();
  try {
    const seconds = await timed(settings.batches, settings.concurrency, async (i) => {
      const customer = world.floorCustomers[i % world.floorCustomers.length]!;
      const { keys, rows, rollups } = rawRows(world.meterId, batchOf(customer, 'raw', i, now), receivedAt);
      const text = rawStatements(
        keys.length,
        rows.length,
        rollups.map((r) => r.length),
        true,
      );
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        await client.query(text.keys, keys.flat());
        await client.query(text.events, rows.flat());
        for (const [level, statement] of text.rollups.entries()) await client.query(statement, rollups[level]!.flat());
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

/**
 * `reads` sequential GETs of `path` (after 20 to warm up), each checked by `ok`: sorted
 * latencies (ms) and the server's CPU ms per request.
 */
async function readLatencies(
  app: RunningServer,
  path: string,
  reads: number,
  ok: (status: number, body: unknown) => boolean,
): Promise<{ times: number[]; cpuMsPerRequest: number | undefined }> {
  const url = `${app.url}${path}`;
  const once = async () => {
    const started = performance.now();
    const response = await fetch(url, { headers: { authorization: `Bearer ${API_KEY}` } });
    const body = (await response.json()) as unknown;
    if (!ok(response.status, body)) {
      throw new Error(`GET ${url} answered ${response.status} ${JSON.stringify(body).slice(0, 200)}`);
    }
    return performance.now() - started;
  };
  for (let i = 0; i < Math.min(20, reads); i++) await once();
  const cpuBefore = app.cpuSeconds();
  const times: number[] = [];
  for (let i = 0; i < reads; i++) times.push(await once());
  const cpuAfter = app.cpuSeconds();
  const cpuMsPerRequest =
    cpuBefore === undefined || cpuAfter === undefined ? undefined : ((cpuAfter - cpuBefore) * 1000) / reads;
  return { times: times.sort((a, b) => a - b), cpuMsPerRequest };
}

/**
 * The metered customer's renewal, issued by the worker's job at the period end: wall ms and
 * this process's CPU ms; and, as its floor, the store's aggregate of the period alone (median ms).
 */
async function renewal(world: World): Promise<{ ms: number; cpuMs: number; aggregateMs: number }> {
  // The aggregate's median of 11 runs (the first ones warm the code up).
  const aggregateTimes: number[] = [];
  for (let i = 0; i < 11; i++) {
    const aggregateStarted = performance.now();
    await sqlUsageStore.aggregate(world.deps.db, {
      customer_id: world.customerId,
      meter: { id: world.meterId, aggregation: 'sum' },
      from: PERIOD_START,
      to: PERIOD_END,
    });
    aggregateTimes.push(performance.now() - aggregateStarted);
  }
  const aggregateMs = percentile(
    aggregateTimes.sort((a, b) => a - b),
    0.5,
  );
  world.clock.set(new Date(PERIOD_END));
  const started = performance.now();
  const cpu = process.cpuUsage();
  const issued = await issueRenewalInvoices.run(world.deps);
  const used = process.cpuUsage(cpu);
  const ms = performance.now() - started;
  const invoice = await world.deps.db
    .selectFrom('invoices')
    .select(['total'])
    .where('subscription_id', '=', world.subscriptionId)
    .where('period_start', '=', PERIOD_END)
    .executeTakeFirst();
  if (issued < 1 || !invoice) throw new Error('usage bench: the renewal invoice was not issued');
  return { ms, cpuMs: (used.user + used.system) / 1000, aggregateMs };
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
    log(
      `  ${database}: seeded ${count(events)} events of one customer over 30 days of its period, bulk ` +
        `(${database === 'sqlite' ? 'a recursive CTE' : 'generate_series'} for keys and events, rollups per minute, hour and day ` +
        `from the same formula) in ${((performance.now() - seedStarted) / 1000).toFixed(1)} s`,
    );
    app = await startServer(
      join(ROOT, 'bench/api-only-server.ts'),
      { DATABASE_URL: databaseUrl, API_KEYS: API_KEY, LOG_LEVEL: 'warn', RATE_LIMIT_MAX: '0' },
      '/api/health',
    );
    const ingestion = await ingestHttp(app, world, settings);
    const floor =
      database === 'sqlite'
        ? floorSqlite(databaseUrl.slice('sqlite:'.length), world, settings)
        : { rate: await floorPostgres(databaseUrl, world, settings), cpu: undefined };
    const usage = await readLatencies(
      app,
      `/api/customers/${world.customerId}/usage`,
      settings.reads,
      (status, body) =>
        status === 200 && (body as { data?: { period_start?: string }[] }).data?.[0]?.period_start === PERIOD_START,
    );
    const health = await readLatencies(app, '/api/health', settings.reads, (status) => status === 200);
    await app.stop();
    app = undefined;
    const renewed = await renewal(world);
    const total = settings.batches * BATCH;
    const figures: UsageFigures = {
      database,
      eventsPerSecond: ingestion.rate,
      floorEventsPerSecond: floor.rate,
      ingestCpuUsPerEvent: ingestion.cpuUsPerEvent,
      floorCpuUsPerEvent: floor.cpu === undefined ? undefined : (floor.cpu * 1e6) / total,
      events,
      usageP50Ms: percentile(usage.times, 0.5),
      usageP99Ms: percentile(usage.times, 0.99),
      usageCpuMs: usage.cpuMsPerRequest,
      healthP50Ms: percentile(health.times, 0.5),
      healthP99Ms: percentile(health.times, 0.99),
      healthCpuMs: health.cpuMsPerRequest,
      renewalMs: renewed.ms,
      renewalCpuMs: renewed.cpuMs,
      aggregateMs: renewed.aggregateMs,
    };
    const met = (ok: boolean) => (ok ? 'met' : 'NOT met');
    const cpu = (value: number | undefined, unit: string) =>
      value === undefined ? '' : `, ${value.toFixed(2)} ${unit}`;
    log(
      `  ${database}: ingestion ${count(figures.eventsPerSecond)} events/s${cpu(figures.ingestCpuUsPerEvent, 'µs API CPU/event')} ` +
        `(batches of ${BATCH}, ${settings.concurrency} in flight) | raw floor ${count(figures.floorEventsPerSecond)} events/s` +
        `${cpu(figures.floorCpuUsPerEvent, 'µs CPU/event')} | ratio ${(figures.eventsPerSecond / figures.floorEventsPerSecond).toFixed(2)}× ` +
        `(target ≥ ${count(TARGETS.eventsPerSecond)}: ${met(figures.eventsPerSecond >= TARGETS.eventsPerSecond)})`,
    );
    log(
      `  ${database}: GET /api/customers/{id}/usage over ${count(events)} events: p50 ${figures.usageP50Ms.toFixed(2)} ms, ` +
        `p99 ${figures.usageP99Ms.toFixed(2)} ms${cpu(figures.usageCpuMs, 'ms API CPU/request')} | floor GET /api/health ` +
        `p50 ${figures.healthP50Ms.toFixed(2)} ms, p99 ${figures.healthP99Ms.toFixed(2)} ms${cpu(figures.healthCpuMs, 'ms CPU/request')} ` +
        `(${settings.reads} requests each; target p99 ≤ ${TARGETS.usageP99Ms} ms: ${met(figures.usageP99Ms <= TARGETS.usageP99Ms)})`,
    );
    log(
      `  ${database}: renewal invoice over ${count(events)} events: ${figures.renewalMs.toFixed(1)} ms, ` +
        `${figures.renewalCpuMs.toFixed(1)} ms CPU | floor: the period's aggregate alone, median ${figures.aggregateMs.toFixed(2)} ms ` +
        `(target ≤ ${TARGETS.renewalMs} ms: ${met(figures.renewalMs <= TARGETS.renewalMs)})`,
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
  log(
    `\nusage (SPEC §15: ingestion beside raw multi-row writes, a period read, a renewal; load average ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}):`,
  );
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
  const number = wholeNumberSetting;
  return {
    batches: number('BENCH_USAGE_BATCHES', smoke ? 10 : 500),
    concurrency: number('BENCH_USAGE_CONCURRENCY', smoke ? 2 : 8),
    sqliteEvents: number('BENCH_USAGE_EVENTS', smoke ? 200 : 1_000_000),
    postgresEvents: number('BENCH_USAGE_PG_EVENTS', smoke ? 200 : 1_000_000),
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
