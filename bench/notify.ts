// Bench scenario for POST /api/notify (docs/performance.md): signed, all-distinct Paystack `charge.success`
// events posted by autocannon against the real app (a child process over a SQLite file,
// synchronous=FULL), interleaved with the bare Fastify route. Prints events/s and p50/p99 and
// their ratio to the bare route, then stops the app and checks, in the database file, that
// every acknowledged (200) event is stored and processed. Measures; never fails on speed.
// Runs inside `npm run bench`, or alone: `node bench/notify.ts`. BENCH_CPU_PROF=<dir> makes
// the app write a V8 CPU profile (`--cpu-prof`) into <dir> when it stops.
import { createHmac } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import autocannon, { type Request } from 'autocannon';
import { freePort, startServer, stopAllServers } from './servers.ts';

const ROOT = resolve(import.meta.dirname, '..');
/** The Paystack secret the app is given and the bench signs with. */
export const SECRET = 'sk_bench_0123456789abcdef0123456789abcdef';
/** DATA_ENCRYPTION_KEY of the bench's servers (required with a provider key; 32 bytes, hex). */
export const BENCH_ENCRYPTION_KEY = 'ab'.repeat(32);
const API_KEY = 'bench_bootstrap_key_0123456789';
/** The target on a 2-core machine (docs/performance.md). */
const TARGET_EVENTS_PER_SECOND = 1000;
/**
 * Distinct payer emails. Before measuring, each section pays once per payer (introducePayers),
 * so every measured event is a returning payer's, whatever the load.
 */
const PAYERS = 1000;

export interface NotifyBenchSettings {
  /** Measured seconds per target, over all rounds. */
  duration: number;
  warmup: number;
  connections: number;
  rounds: number;
}

interface Tally {
  latencies: number[];
  seconds: number;
  ok: number;
  failures: number;
}

let sequence = 0;

/**
 * Posts one signed charge.success per payer (PAYERS of them, `connections` at a time) to the
 * app at `url`, so each payer's customer exists before anything is measured. Throws on any
 * answer but 200. Returns how many events were acknowledged.
 */
export async function introducePayers(url: string, connections = 20): Promise<number> {
  let left = PAYERS;
  let acknowledged = 0;
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (left > 0) {
        left -= 1;
        const body = chargeBody();
        const response = await fetch(`${url}/api/notify?p=paystack`, { method: 'POST', body, headers: signed(body) });
        const text = await response.text();
        if (response.status !== 200)
          throw new Error(`POST /api/notify answered ${response.status} ${text.slice(0, 200)}`);
        acknowledged += 1;
      }
    }),
  );
  return acknowledged;
}

/** A realistic `charge.success` body (Paystack's documented shape), unique per call. */
export function chargeBody(): string {
  sequence += 1;
  const n = sequence;
  return JSON.stringify({
    event: 'charge.success',
    data: {
      id: 4_000_000_000 + n,
      domain: 'live',
      status: 'success',
      reference: `bench_${process.pid}_${n}`,
      amount: 250_000 + (n % 1000) * 100,
      message: null,
      gateway_response: 'Successful',
      paid_at: new Date().toISOString(),
      created_at: new Date().toISOString(),
      channel: 'card',
      currency: 'NGN',
      ip_address: '102.89.34.11',
      metadata: n % 3 === 0 ? '' : { referrer: 'https://shop.example.com/checkout', cart_id: String(n) },
      log: null,
      fees: 3750,
      fees_split: null,
      authorization: {
        authorization_code: `AUTH_${n.toString(36)}`,
        bin: '408408',
        last4: '4081',
        exp_month: '12',
        exp_year: '2030',
        channel: 'card',
        card_type: 'visa ',
        bank: 'TEST BANK',
        country_code: 'NG',
        brand: 'visa',
        reusable: true,
        signature: 'SIG_yEXu7dLBeqG0kU7g95Ke',
        account_name: null,
      },
      customer: {
        id: 1_000_000 + (n % PAYERS),
        first_name: 'Ada',
        last_name: 'Obi',
        email: `payer${n % PAYERS}@shop.example.com`,
        customer_code: `CUS_${(n % PAYERS).toString(36)}`,
        phone: null,
        metadata: null,
        risk_action: 'default',
      },
      plan: {},
      split: {},
      order_id: null,
      requested_amount: 250_000 + (n % 1000) * 100,
    },
  });
}

/** Headers of a Paystack notification of `body`: JSON, HMAC-SHA512 with SECRET. */
export function signed(body: string): Record<string, string> {
  return {
    'content-type': 'application/json',
    'x-paystack-signature': createHmac('sha512', SECRET).update(body).digest('hex'),
  };
}

/** The scenario's autocannon request: POST /api/notify?p=paystack, a new signed event every time. */
export function notifyRequest(): Request {
  return {
    method: 'POST',
    path: '/api/notify?p=paystack',
    setupRequest: (request) => {
      const body = chargeBody();
      return { ...request, method: 'POST', body, headers: { ...request.headers, ...signed(body) } };
    },
  };
}

function notifyLoad(url: string, connections: number, seconds: number, tally?: Tally) {
  const instance = autocannon({ url, connections, duration: seconds, requests: [notifyRequest()] });
  instance.on('response', (_client, status, _bytes, ms) => {
    if (!tally) return;
    tally.latencies.push(ms);
    if (status === 200) tally.ok += 1;
  });
  return instance;
}

function bareLoad(url: string, connections: number, seconds: number, tally?: Tally) {
  const instance = autocannon({ url, connections, duration: seconds, requests: [{ path: '/' }] });
  if (tally) instance.on('response', (_client, _status, _bytes, ms) => tally.latencies.push(ms));
  return instance;
}

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

function summary(tally: Tally) {
  const sorted = Float64Array.from(tally.latencies).sort();
  return {
    rps: tally.latencies.length / tally.seconds,
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    requests: tally.latencies.length,
  };
}

/** Counts, in the stopped app's database file, what was stored and processed. */
function countStored(dbPath: string) {
  const db = new DatabaseSync(dbPath, { readOnly: true });
  try {
    const one = (query: string) => Number((db.prepare(query).get() as { n: number }).n);
    return {
      inbox: one('select count(*) as n from provider_events'),
      processed: one("select count(*) as n from provider_events where status = 'processed'"),
      payments: one('select count(*) as n from payments'),
    };
  } finally {
    db.close();
  }
}

/** What one notify run measured (the report's figures, for summaries). */
export interface NotifyBenchResult {
  /** Events answered per second over the measured time. */
  rps: number;
  /** The bare Fastify route's req/s in the same run. */
  bareRps: number;
  /** rps ÷ bareRps. */
  ratio: number;
  p50Ms: number;
  p99Ms: number;
  /** Responses that were not 2xx, socket errors and timeouts: should be 0. */
  failures: number;
  /**
   * The app's CPU time (user + system, process.cpuUsage via its /metrics) over the measured
   * rounds ÷ the events answered in them, in ms; absent when the metrics could not be read.
   */
  cpuMsPerEvent?: number;
}

/**
 * Runs the notify scenario in `workDir` with `settings`; writes its report with `log` and
 * returns its figures. Starts (and stops) its own bare server and app.
 */
export async function benchNotify(
  workDir: string,
  settings: NotifyBenchSettings,
  log: (line: string) => void,
): Promise<NotifyBenchResult> {
  const dbPath = join(workDir, 'notify.db');
  const metricsPort = await freePort();
  const bare = await startServer(join(ROOT, 'bench/bare-server.ts'), {}, '/');
  const app = await startServer(
    join(ROOT, 'src/main.ts'),
    {
      DATABASE_URL: `sqlite:${dbPath}`,
      API_KEYS: API_KEY,
      PAYSTACK_SECRET_KEY: SECRET,
      DATA_ENCRYPTION_KEY: BENCH_ENCRYPTION_KEY,
      LOG_LEVEL: 'warn',
      RATE_LIMIT_MAX: '0',
      // The app's own CPU time (prom-client process metrics) gives a figure that does not
      // depend on what else the machine runs: CPU per event.
      METRICS_PORT: String(metricsPort),
      // BENCH_CPU_PROF=<dir>: the app writes a V8 CPU profile there when it stops.
      ...(process.env.BENCH_CPU_PROF
        ? { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${process.env.BENCH_CPU_PROF}` }
        : {}),
    },
    '/api/health',
  );
  const cpuSeconds = async () => {
    const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    const metric = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? Number.NaN);
    return { user: metric('process_cpu_user_seconds_total'), system: metric('process_cpu_system_seconds_total') };
  };
  let appCpu = 0;
  let appSystemCpu = 0;
  let acknowledged = 0;
  try {
    const probe = chargeBody();
    const response = await fetch(`${app.url}/api/notify?p=paystack`, {
      method: 'POST',
      body: probe,
      headers: signed(probe),
    });
    const text = await response.text();
    if (response.status !== 200) throw new Error(`POST /api/notify answered ${response.status} ${text.slice(0, 200)}`);
    acknowledged += 1;
    acknowledged += await introducePayers(app.url);

    const { connections, warmup, rounds } = settings;
    const slice = settings.duration / rounds;
    process.stdout.write(`notify: warm-up … `);
    if (warmup > 0) {
      await bareLoad(bare.url, connections, warmup);
      const warm: Tally = { latencies: [], seconds: 0, ok: 0, failures: 0 };
      const result = await notifyLoad(app.url, connections, warmup, warm);
      acknowledged += warm.ok;
      if (result.errors + result.timeouts > 0) throw new Error('notify warm-up had socket errors or timeouts');
    }
    const bareTally: Tally = { latencies: [], seconds: 0, ok: 0, failures: 0 };
    const notifyTally: Tally = { latencies: [], seconds: 0, ok: 0, failures: 0 };
    process.stdout.write('rounds ');
    for (let round = 1; round <= rounds; round += 1) {
      const b = await bareLoad(bare.url, connections, slice, bareTally);
      bareTally.seconds += b.duration;
      const cpuBefore = await cpuSeconds();
      const n = await notifyLoad(app.url, connections, slice, notifyTally);
      const cpuAfter = await cpuSeconds();
      appCpu += cpuAfter.user + cpuAfter.system - (cpuBefore.user + cpuBefore.system);
      appSystemCpu += cpuAfter.system - cpuBefore.system;
      notifyTally.seconds += n.duration;
      notifyTally.failures += n.non2xx + n.errors + n.timeouts;
      process.stdout.write(`${round} `);
    }
    log('done');
    acknowledged += notifyTally.ok;

    await app.stop();
    const stored = countStored(dbPath);
    const bareFigures = summary(bareTally);
    const notifyFigures = summary(notifyTally);
    const row = (name: string, f: ReturnType<typeof summary>) =>
      `| ${name} | ${Math.round(f.rps).toLocaleString('en-US')} | ${f.p50.toFixed(2)} | ${f.p99.toFixed(2)} | ` +
      `${(f.rps / bareFigures.rps).toFixed(2)}× | ${(f.p99 / bareFigures.p99).toFixed(2)}× |`;
    log('');
    log(`notify scenario (${connections} connections, ${settings.duration} s in ${rounds} rounds; ${loadNote()}):`);
    log('| scenario | req/s | p50 ms | p99 ms | rps vs bare | p99 vs bare |');
    log('|---|---|---|---|---|---|');
    log(row('bare Fastify GET / (baseline)', bareFigures));
    log(row('POST /api/notify paystack charge.success', notifyFigures));
    if (notifyTally.failures > 0) log(`WARNING: ${notifyTally.failures} notify responses were errors or not 2xx`);
    const met = notifyFigures.rps >= TARGET_EVENTS_PER_SECOND;
    log(
      `target (measured, not enforced): ≥ ${TARGET_EVENTS_PER_SECOND.toLocaleString('en-US')} events/s on SQLite: ` +
        `${Math.round(notifyFigures.rps).toLocaleString('en-US')} events/s — ${met ? 'met' : 'MISSED'}`,
    );
    const cpuPerEvent = (appCpu * 1000) / notifyFigures.requests;
    const systemPerEvent = (appSystemCpu * 1000) / notifyFigures.requests;
    log(
      `app CPU: ${cpuPerEvent.toFixed(2)} ms per event (${systemPerEvent.toFixed(2)} ms of it in the kernel; ` +
        `HTTP, verification, both commits) — one dedicated core would carry ≈ ` +
        `${Math.round(1000 / cpuPerEvent).toLocaleString('en-US')} events/s`,
    );
    const durable = stored.processed >= acknowledged && stored.payments >= acknowledged;
    log(
      `durability: ${acknowledged.toLocaleString('en-US')} events acknowledged with 200; after the app stopped the ` +
        `database holds ${stored.inbox.toLocaleString('en-US')} inbox rows (${stored.processed.toLocaleString('en-US')} processed) ` +
        `and ${stored.payments.toLocaleString('en-US')} payments — ${durable ? 'every acknowledged event is durable' : 'MISSING EVENTS'}`,
    );
    return {
      rps: notifyFigures.rps,
      bareRps: bareFigures.rps,
      ratio: notifyFigures.rps / bareFigures.rps,
      p50Ms: notifyFigures.p50,
      p99Ms: notifyFigures.p99,
      failures: notifyTally.failures,
      ...(Number.isFinite(cpuPerEvent) ? { cpuMsPerEvent: cpuPerEvent } : {}),
    };
  } finally {
    await Promise.all([bare.stop(), app.stop()]);
  }
}

function loadNote(): string {
  const load = loadavg()[0]!;
  const busy = load > cpus().length * 0.5 ? ' — the machine was busy; expect noisy figures' : '';
  return `load average ${load.toFixed(2)} on ${cpus().length} CPUs${busy}`;
}

if (import.meta.main) {
  const number = (name: string, fallback: number) => {
    const value = Number(process.env[name]);
    return process.env[name] && Number.isFinite(value) && value > 0 ? value : fallback;
  };
  mkdirSync(join(ROOT, '.bench'), { recursive: true });
  const workDir = mkdtempSync(join(ROOT, '.bench', 'notify-'));
  try {
    await benchNotify(
      workDir,
      {
        duration: number('BENCH_DURATION', 5),
        warmup: number('BENCH_WARMUP', 2),
        connections: Math.round(number('BENCH_CONNECTIONS', 20)),
        rounds: Math.round(number('BENCH_ROUNDS', 5)),
      },
      (line) => process.stdout.write(`${line}\n`),
    );
  } catch (error) {
    process.stderr.write(`bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exitCode = 1;
  } finally {
    await stopAllServers();
    if (process.env.BENCH_KEEP !== '1') rmSync(workDir, { recursive: true, force: true });
  }
}
