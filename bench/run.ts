// `npm run bench`: seeds SQLite databases of 1,000 and 1,000,000 customers, runs the API on
// each, a bare Fastify baseline and a minimal route doing the same page read
// (minimal-server.ts) in child processes, loads them with autocannon and prints req/s, latency
// and server CPU per request, each against the bare route of the same run. Then the
// provider-event intake (notify.ts), webhook fan-out and delivery (deliveries.ts), and the read
// and notify scenarios on PostgreSQL with one and two instances (postgres.ts), and ONE summary
// table of the speed ratios with their targets (summary.ts, docs/performance.md). Servers and
// the load generator are pinned to different CPUs where taskset exists. Then the operator
// console's list pages at 1 M customers (console.ts). Measures, never fails
// on speed.
import { mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { benchBillingRuns, billingRunSizes } from './billing-run.ts';
import { benchCharging } from './charging.ts';
import { benchDeliveries } from './deliveries.ts';
import { type Measurement, measureAll, type Target } from './measure.ts';
import { benchNotify } from './notify.ts';
import { benchPostgres } from './postgres.ts';
import { seedCustomers } from './seed.ts';
import { allowedCpus, pinApart, type RunningServer, startServer, stopAllServers } from './servers.ts';
import { summaryTable } from './summary.ts';
import { benchUsage, usageBenchSettings } from './usage.ts';
import { benchConsole, consoleBenchSettings } from './console.ts';

const ROOT = resolve(import.meta.dirname, '..');
const API_KEY = 'bench_bootstrap_key_0123456789';
const SMALL_ROWS = 1_000;

/** The list request of every list scenario (`GET /api/customers?limit=10`). */
const LIST_PATH = '/api/customers?limit=10';

/** A number from the environment, or `fallback`; must be at least `min`. */
function envNumber(name: string, fallback: number, min: number): number {
  const text = process.env[name];
  if (text === undefined || text.trim() === '') return fallback;
  const value = Number(text);
  if (!Number.isFinite(value) || value < min) throw new Error(`${name} must be a number ≥ ${min} (got "${text}")`);
  return value;
}

/**
 * BENCH_SMOKE=1: every scenario once at a tiny size (about half a minute; .ci/run runs it so a
 * broken bench fails CI). Its figures mean nothing; it proves each scenario still runs.
 */
const smoke = process.env.BENCH_SMOKE === '1';
if (smoke) {
  process.env.BENCH_PG_ROWS ??= '10';
  process.env.BILLING_RUN_N ??= '20';
  process.env.BILLING_RUN_PG_N ??= '20';
  process.env.BILLING_RUN_IDLE_SETTLE_S ??= '1';
  process.env.BILLING_RUN_IDLE_S ??= '1';
}

const settings = {
  /** Measured seconds per scenario. */
  duration: envNumber('BENCH_DURATION', smoke ? 1 : 5, 1),
  /** Seconds of load thrown away before each measurement (JIT, caches). */
  warmup: envNumber('BENCH_WARMUP', smoke ? 0 : 2, 0),
  connections: Math.round(envNumber('BENCH_CONNECTIONS', smoke ? 4 : 20, 1)),
  /** Interleaved slices of the measured time (see measure.ts). */
  rounds: Math.round(envNumber('BENCH_ROUNDS', smoke ? 1 : 5, 1)),
  /** Rows of the big case (1,000,000 unless testing the bench itself). */
  bigRows: Math.round(envNumber('BENCH_ROWS', smoke ? 20 : 1_000_000, 10)),
  /** Renewal invoices of the charging scenario. */
  charges: Math.round(envNumber('BENCH_CHARGES', smoke ? 20 : 2_000, 1)),
  /** Burst events of the deliveries scenario. */
  deliveryEvents: Math.round(envNumber('BENCH_DELIVERY_EVENTS', smoke ? 50 : 3_000, 1)),
};

interface Scenario extends Target {
  label: string;
}

interface Row {
  scenario: string;
  result: Measurement;
}

const count = (n: number) => n.toLocaleString('en-US');
const log = (line: string) => process.stdout.write(`${line}\n`);

/** The 1-minute load average, with a warning when other work competes for the CPUs. */
function loadNote(): string {
  const load = loadavg()[0]!;
  const busy = load > cpus().length * 0.5 ? ' — the machine was busy in the last minute; expect noisy figures' : '';
  return `load average ${load.toFixed(2)} on ${cpus().length} CPUs${busy}`;
}

/**
 * The API in a child process over the SQLite file `dbPath`, ready when /api/health answers;
 * `env` adds or overrides variables (e.g. RESPONSE_CACHE_MB=0).
 */
function startApp(dbPath: string, env: Record<string, string> = {}): Promise<RunningServer> {
  return startServer(
    join(ROOT, 'src/main.ts'),
    {
      DATABASE_URL: `sqlite:${dbPath}`,
      API_KEYS: API_KEY,
      LOG_LEVEL: 'warn',
      // Rate limiting (SPEC §1, 100/s per key by default) would cap every figure; off for the bench.
      RATE_LIMIT_MAX: '0',
      ...env,
    },
    '/api/health',
  );
}

const auth = { authorization: `Bearer ${API_KEY}` };

/** The list response body of `app`, as text. */
async function listBody(app: RunningServer): Promise<string> {
  return (await fetch(`${app.url}${LIST_PATH}`, { headers: auth })).text();
}

/**
 * Fails the run early when the app does not answer as the bench assumes (200, exact total);
 * with `sameAs`, when its list body differs from that one (the minimal route must answer
 * exactly what the app answers).
 */
async function checkApp(app: RunningServer, rows: number, sampleId?: string, sameAs?: string): Promise<void> {
  const response = await fetch(`${app.url}${LIST_PATH}`, { headers: auth });
  const text = await response.text();
  const body = JSON.parse(text) as { data?: unknown[]; meta?: { total?: number } };
  if (response.status !== 200 || body.meta?.total !== rows || body.data?.length !== Math.min(rows, 10)) {
    throw new Error(`GET ${LIST_PATH} answered ${response.status} ${text.slice(0, 200)}`);
  }
  if (sameAs !== undefined && text !== sameAs) {
    throw new Error(`GET ${LIST_PATH} of ${app.url} differs from the app's: ${text.slice(0, 200)}`);
  }
  if (sampleId) {
    const one = await fetch(`${app.url}/api/customers/${sampleId}`, { headers: auth });
    await one.arrayBuffer();
    if (one.status !== 200) throw new Error(`GET /api/customers/${sampleId} answered ${one.status}`);
  }
}

function table(rows: Row[], bare: Measurement): string {
  const header = ['scenario', 'req/s', 'p50 ms', 'p99 ms', 'rps vs bare', 'p99 vs bare', 'server CPU µs/req'];
  const lines = rows.map(({ scenario, result }) => [
    scenario,
    count(Math.round(result.rps)),
    result.p50Ms.toFixed(2),
    result.p99Ms.toFixed(2),
    `${(result.rps / bare.rps).toFixed(2)}×`,
    `${(result.p99Ms / bare.p99Ms).toFixed(2)}×`,
    result.cpuMsPerRequest === undefined ? '—' : String(Math.round(result.cpuMsPerRequest * 1000)),
  ]);
  const widths = header.map((title, i) => Math.max(title.length, ...lines.map((line) => line[i]!.length)));
  const format = (cells: string[]) =>
    cells.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join(' | ');
  return [format(header), widths.map((w) => '-'.repeat(w)).join('-|-'), ...lines.map(format)].join('\n');
}

async function main(workDir: string): Promise<void> {
  log(
    `bench: Node ${process.version}, ${settings.connections} connections, ` +
      `${settings.warmup} s warm-up + ${settings.duration} s per scenario in ${settings.rounds} rounds; ${loadNote()}`,
  );
  const pinning = pinApart();
  const smallPath = join(workDir, 'customers-1k.db');
  const bigPath = join(workDir, 'customers-big.db');
  const seed = async (path: string, rows: number) => {
    process.stdout.write(`seeding ${count(rows)} customers … `);
    const seeded = await seedCustomers(path, rows);
    log(`${(seeded.insertMs / 1000).toFixed(1)} s, ${Math.round(statSync(path).size / 1_048_576)} MiB`);
    return seeded;
  };
  await seed(smallPath, SMALL_ROWS);
  const { sampleIds } = await seed(bigPath, settings.bigRows);

  // All servers run at once (an idle one costs next to nothing) so the rounds can interleave them.
  const bareServer = await startServer(join(ROOT, 'bench/bare-server.ts'), {}, '/');
  const minimalServer = await startServer(
    join(ROOT, 'bench/minimal-server.ts'),
    { DATABASE_URL: `sqlite:${bigPath}` },
    '/',
  );
  // The body cache is opt-in (RESPONSE_CACHE_MB=0 by default): the "cache on" rows turn it on.
  const small = await startApp(smallPath, { RESPONSE_CACHE_MB: '16' });
  const big = await startApp(bigPath, { RESPONSE_CACHE_MB: '16' });
  // The same list without the response cache: what the service's own overhead costs over the
  // minimal route when every request reads the database (the ≥ 0.8 target).
  const uncached = await startApp(bigPath, { RESPONSE_CACHE_MB: '0' });
  log(pinningNote(pinning, [bareServer, minimalServer, small, big, uncached]));
  await checkApp(small, SMALL_ROWS);
  await checkApp(big, settings.bigRows, sampleIds[0]);
  await checkApp(uncached, settings.bigRows, undefined, await listBody(big));
  await checkApp(minimalServer, settings.bigRows, undefined, await listBody(big));
  const randomCustomer = () => `/api/customers/${sampleIds[Math.floor(Math.random() * sampleIds.length)]}`;
  const scenarios: Scenario[] = [
    { label: 'bare Fastify GET / (baseline)', url: bareServer.url, path: '/', cpuSeconds: bareServer.cpuSeconds },
    {
      label: `minimal route: the same page read @ ${count(settings.bigRows)}`,
      url: minimalServer.url,
      path: LIST_PATH,
      cpuSeconds: minimalServer.cpuSeconds,
    },
    {
      label: `GET /api/customers @ ${count(SMALL_ROWS)}`,
      url: small.url,
      path: LIST_PATH,
      headers: auth,
      cpuSeconds: small.cpuSeconds,
    },
    {
      label: `GET /api/customers @ ${count(settings.bigRows)}`,
      url: big.url,
      path: LIST_PATH,
      headers: auth,
      cpuSeconds: big.cpuSeconds,
    },
    {
      label: `GET /api/customers @ ${count(settings.bigRows)}, response cache off`,
      url: uncached.url,
      path: LIST_PATH,
      headers: auth,
      cpuSeconds: uncached.cpuSeconds,
    },
    {
      label: `GET /api/customers/{id} @ ${count(settings.bigRows)}`,
      url: big.url,
      path: randomCustomer,
      headers: auth,
      cpuSeconds: big.cpuSeconds,
    },
  ];
  process.stdout.write(`measuring ${scenarios.length} scenarios in ${settings.rounds} interleaved rounds … `);
  const results = await measureAll(scenarios, settings, (round) => process.stdout.write(`${round} `));
  log('done');
  await Promise.all([bareServer.stop(), minimalServer.stop(), small.stop(), big.stop(), uncached.stop()]);
  const rows: Row[] = scenarios.map((scenario, i) => ({ scenario: scenario.label, result: results[i]! }));
  const [bare, minimal, smallList, bigList, uncachedList] = results as [
    Measurement,
    Measurement,
    Measurement,
    Measurement,
    Measurement,
  ];

  log(`\n${table(rows, bare)}\n`);
  const failures = rows.filter((row) => row.result.failures > 0);
  for (const { scenario, result } of failures) {
    log(`WARNING: ${scenario}: ${result.failures} of ${result.requests} responses were errors or not 2xx`);
  }
  // The sections return their figures for the summary (summary.ts reads what they give).
  // BENCH_LISTS_ONLY=1 stops after the lists (their rows of the summary stay).
  const listsOnly = process.env.BENCH_LISTS_ONLY === '1';
  const notify: unknown = listsOnly ? undefined : await benchNotify(workDir, settings, log);
  const deliveries: unknown = listsOnly
    ? undefined
    : await benchDeliveries(workDir, { duration: settings.duration, events: settings.deliveryEvents }, log);
  const postgres: unknown = listsOnly ? undefined : await benchPostgres(settings, log);
  // Automatic renewal charging against the fake Paystack at 50 ms (SPEC §10): invoices/s, target ≥ 200.
  if (!listsOnly) await benchCharging(workDir, { invoices: settings.charges }, log);
  // The billing run through a test clock beside its floor (BILLING_RUN_N, BILLING_RUN_PG_N).
  if (!listsOnly) {
    log('\nbilling run (a month advanced on a test clock; CPU per renewal beside the floor):');
    await benchBillingRuns(
      workDir,
      {
        sqlite: billingRunSizes('BILLING_RUN_N', [10_000, 100_000]),
        postgres: billingRunSizes('BILLING_RUN_PG_N', [10_000]),
      },
      log,
    );
  }
  // Usage (SPEC §15): ingestion beside raw writes, the period read, a renewal (BENCH_USAGE_*).
  if (!listsOnly) await benchUsage(workDir, usageBenchSettings(smoke), log);
  // The operator console's list pages at 1 M customers, p95 beside a floor (BENCH_CONSOLE_*).
  if (!listsOnly) await benchConsole(workDir, consoleBenchSettings(smoke), log);
  log(
    `\nsummary: the ratios against the bare route and the floors, measured in this run (targets measured, not enforced); ${loadNote()}`,
  );
  log(
    summaryTable({
      bare,
      minimal,
      smallList,
      bigList,
      uncachedList,
      smallRows: SMALL_ROWS,
      bigRows: settings.bigRows,
      notify,
      postgres,
      deliveries,
    }),
  );
  log(pinningNote(pinning, []));
}

/** Says how servers and load were placed, checked against what the kernel reports. */
function pinningNote(pinning: ReturnType<typeof pinApart>, servers: RunningServer[]): string {
  if (!pinning) return 'CPU pinning: none (taskset missing or a single CPU): servers and load share the CPUs';
  const load = allowedCpus(process.pid);
  const placed = servers.map((server) => server.pid).map((pid) => (pid === undefined ? undefined : allowedCpus(pid)));
  const ok = load === pinning.load && placed.every((cpus) => cpus === pinning.server);
  return (
    `CPU pinning (taskset): servers on CPU ${pinning.server}, load generator (autocannon, this process) on CPU ` +
    `${pinning.load}${ok ? '' : ` — CHECK FAILED: kernel reports load ${load}, servers ${placed.join(', ')}`}`
  );
}

mkdirSync(join(ROOT, '.bench'), { recursive: true });
const workDir = mkdtempSync(join(ROOT, '.bench', 'run-'));
const cleanUp = async () => {
  await stopAllServers();
  if (process.env.BENCH_KEEP !== '1') rmSync(workDir, { recursive: true, force: true });
};
process.once('SIGINT', () => void cleanUp().finally(() => process.exit(130)));
process.once('SIGTERM', () => void cleanUp().finally(() => process.exit(143)));

try {
  await main(workDir);
} catch (error) {
  process.stderr.write(`bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
} finally {
  await cleanUp();
}
