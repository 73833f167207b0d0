// Bench scenario for outbound webhooks (docs/performance.md): the real app (`npm start`: API and worker in
// one child process over a SQLite file, synchronous=FULL) with 3 endpoints on 3 local HTTPS
// receivers (allowed via WEBHOOK_ALLOW_PRIVATE_CIDRS, trusted via NODE_EXTRA_CA_CERTS). Events
// are customers created through the API; every event goes to all 3 receivers.
//   1. burst: N events as fast as the API takes them → delivered deliveries/s;
//   2. paced: events at the target rate (1,000 deliveries/s) → commit-to-receipt p50/p99.
// "Commit" is the event's created_at (taken before the commit, so delays are overstated, never
// understated); "receipt" is when the receiver has the whole body. Each receiver must see
// each event exactly once. Measures; never fails on speed. Alone: `node bench/deliveries.ts`.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, request as undiciRequest } from 'undici';
import { answer, type Receiver, startReceiver, testCertificate } from '../test/helpers/webhook-receiver.ts';
import { startServer, stopAllServers } from './servers.ts';
import type { DeliveriesFigures } from './summary.ts';

const ROOT = resolve(import.meta.dirname, '..');
const API_KEY = 'bench_bootstrap_key_0123456789';
const RECEIVERS = 3;
/** The targets (docs/performance.md). */
const TARGET_DELIVERIES_PER_SECOND = 1000;
const TARGET_P99_MS = 1000;
/** Most API requests the producer keeps open at once. */
const PRODUCER_CONCURRENCY = 32;
/** Longest wait for the last deliveries of a phase. */
const DRAIN_TIMEOUT_MS = 60_000;

export interface DeliveriesBenchSettings {
  /** Measured seconds of the paced phase. */
  duration: number;
  /** Events of the burst phase. */
  events?: number;
}

interface Receipt {
  eventId: string;
  /** ms from the event's created_at to the receipt */
  delayMs: number;
  receivedAt: number;
}

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

function receiptsOf(receivers: Receiver[], from: number): Receipt[][] {
  return receivers.map((receiver) =>
    receiver.requests.slice(from).map((request) => {
      const body = JSON.parse(request.body) as { data: { created_at: string } };
      return {
        eventId: String(request.headers['x-event-id']),
        delayMs: request.receivedAt - Date.parse(body.data.created_at),
        receivedAt: request.receivedAt,
      };
    }),
  );
}

/** Creates customers through the API: `count` of them, at `perSecond` (or as fast as possible). */
async function produce(url: string, count: number, perSecond: number | undefined): Promise<void> {
  const dispatcher = new Agent({ connections: PRODUCER_CONCURRENCY });
  let sent = 0;
  let failed = 0;
  const started = performance.now();
  const inFlight = new Set<Promise<void>>();
  try {
    while (sent < count) {
      if (perSecond !== undefined) {
        const due = started + (sent / perSecond) * 1000;
        const wait = due - performance.now();
        if (wait > 1) await sleep(wait);
      }
      if (inFlight.size >= PRODUCER_CONCURRENCY) await Promise.race(inFlight);
      sent += 1;
      const request = undiciRequest(`${url}/api/customers`, {
        method: 'POST',
        headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify({ email: `bench-${process.pid}-${Date.now()}-${sent}@example.com`, name: 'Bench' }),
        dispatcher,
      })
        .then(async (response) => {
          await response.body.dump();
          if (response.statusCode !== 201) failed += 1;
        })
        .catch(() => {
          failed += 1;
        })
        .finally(() => inFlight.delete(request));
      inFlight.add(request);
    }
    await Promise.all(inFlight);
  } finally {
    await dispatcher.close();
  }
  if (failed > 0) throw new Error(`${failed} of ${count} POST /api/customers failed`);
}

async function drained(receivers: Receiver[], expected: number): Promise<boolean> {
  const deadline = Date.now() + DRAIN_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (receivers.every((r) => r.requests.length >= expected)) return true;
    await sleep(20);
  }
  return false;
}

/** Exactly once per receiver: distinct event ids, as many as events. */
function exactlyOnce(receipts: Receipt[][], events: number): string {
  const problems = receipts
    .map((list, i) => {
      const distinct = new Set(list.map((r) => r.eventId)).size;
      return distinct === events && list.length === events
        ? undefined
        : `receiver ${i + 1}: ${list.length} requests, ${distinct} distinct of ${events} events`;
    })
    .filter((p) => p !== undefined);
  return problems.length === 0 ? 'every receiver got every event exactly once' : `PROBLEM: ${problems.join('; ')}`;
}

function loadNote(): string {
  const load = loadavg()[0]!;
  const busy = load > cpus().length * 0.5 ? ' — the machine was busy; expect noisy figures' : '';
  return `load average ${load.toFixed(2)} on ${cpus().length} CPUs${busy}`;
}

/** Runs the deliveries scenario in `workDir`; writes its report with `log`. Starts and stops its own app. */
export async function benchDeliveries(
  workDir: string,
  settings: DeliveriesBenchSettings,
  log: (line: string) => void,
): Promise<DeliveriesFigures> {
  const caPath = join(workDir, 'receiver-ca.pem');
  writeFileSync(caPath, testCertificate().cert);
  const receivers: Receiver[] = [];
  for (let i = 0; i < RECEIVERS; i++) receivers.push(await startReceiver(undefined, answer(200, 'ok')));
  const app = await startServer(
    join(ROOT, 'src/main.ts'),
    {
      DATABASE_URL: `sqlite:${join(workDir, 'deliveries.db')}`,
      API_KEYS: API_KEY,
      LOG_LEVEL: 'warn',
      RATE_LIMIT_MAX: '0',
      WEBHOOK_ALLOW_PRIVATE_CIDRS: '127.0.0.1/32',
      NODE_EXTRA_CA_CERTS: caPath,
    },
    '/api/health',
  );
  try {
    for (const receiver of receivers) {
      const response = await fetch(`${app.url}/api/webhooks`, {
        method: 'POST',
        headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify({ url: receiver.url, events: ['customer.created'], secret: 'bench-secret-0123456789' }),
      });
      if (response.status !== 201)
        throw new Error(`POST /api/webhooks answered ${response.status} ${await response.text()}`);
    }
    const burstEvents = settings.events ?? 3000;
    const pacedEvents = Math.round((settings.duration * TARGET_DELIVERIES_PER_SECOND) / RECEIVERS);

    // Warm-up: a few events through the whole path (JIT, TLS sessions, connection pools).
    process.stdout.write('deliveries: warm-up … ');
    await produce(app.url, 100, undefined);
    if (!(await drained(receivers, 100))) throw new Error('warm-up deliveries did not arrive');

    process.stdout.write(`burst of ${burstEvents.toLocaleString('en-US')} events … `);
    const burstFrom = receivers[0]!.requests.length;
    const burstStart = performance.timeOrigin + performance.now();
    await produce(app.url, burstEvents, undefined);
    const burstComplete = await drained(receivers, burstFrom + burstEvents);
    const burst = receiptsOf(receivers, burstFrom);
    const burstEnd = Math.max(...burst.flat().map((r) => r.receivedAt));
    const burstRate = burst.flat().length / ((burstEnd - burstStart) / 1000);

    process.stdout.write(`paced ${Math.round(pacedEvents / settings.duration)} events/s for ${settings.duration} s … `);
    const pacedFrom = receivers[0]!.requests.length;
    const pacedStart = performance.timeOrigin + performance.now();
    await produce(app.url, pacedEvents, pacedEvents / settings.duration);
    const pacedComplete = await drained(receivers, pacedFrom + pacedEvents);
    const paced = receiptsOf(receivers, pacedFrom);
    const pacedEnd = Math.max(...paced.flat().map((r) => r.receivedAt));
    const pacedRate = paced.flat().length / ((pacedEnd - pacedStart) / 1000);
    log('done');

    const delays = (receipts: Receipt[][]) => Float64Array.from(receipts.flat().map((r) => r.delayMs)).sort();
    const burstDelays = delays(burst);
    const pacedDelays = delays(paced);
    const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
    log('');
    log(`deliveries scenario (${RECEIVERS} HTTPS receivers, SQLite, API + worker in one process; ${loadNote()}):`);
    log('| phase | events | deliveries | deliveries/s | commit→receipt p50 ms | p99 ms | max ms |');
    log('|---|---|---|---|---|---|---|');
    log(
      `| burst (as fast as the API takes them) | ${fmt(burstEvents)} | ${fmt(burst.flat().length)} | ${fmt(burstRate)} | ` +
        `${percentile(burstDelays, 50).toFixed(0)} | ${percentile(burstDelays, 99).toFixed(0)} | ${burstDelays.at(-1)?.toFixed(0)} |`,
    );
    log(
      `| paced at ${fmt(TARGET_DELIVERIES_PER_SECOND)} deliveries/s | ${fmt(pacedEvents)} | ${fmt(paced.flat().length)} | ` +
        `${fmt(pacedRate)} | ${percentile(pacedDelays, 50).toFixed(0)} | ${percentile(pacedDelays, 99).toFixed(0)} | ` +
        `${pacedDelays.at(-1)?.toFixed(0)} |`,
    );
    if (!burstComplete || !pacedComplete)
      log(`WARNING: not every delivery arrived within ${DRAIN_TIMEOUT_MS / 1000} s`);
    log(`correctness: burst — ${exactlyOnce(burst, burstEvents)}; paced — ${exactlyOnce(paced, pacedEvents)}`);
    const verdict = (met: boolean) => (met ? 'met' : 'MISSED');
    log('targets (measured, not enforced):');
    log(
      `  ≥ ${fmt(TARGET_DELIVERIES_PER_SECOND)} deliveries/s on SQLite (burst): ${fmt(burstRate)} — ` +
        verdict(burstRate >= TARGET_DELIVERIES_PER_SECOND),
    );
    const p99 = percentile(pacedDelays, 99);
    log(
      `  p99 commit→receipt < ${fmt(TARGET_P99_MS)} ms at ${fmt(TARGET_DELIVERIES_PER_SECOND)} deliveries/s (paced): ` +
        `${p99.toFixed(0)} ms at ${fmt(pacedRate)}/s — ${verdict(p99 < TARGET_P99_MS && pacedRate >= TARGET_DELIVERIES_PER_SECOND * 0.95)}`,
    );
    // Figures for the summary only when every delivery arrived exactly once: a lossy run has none.
    const correct = burstComplete && pacedComplete;
    return correct ? { burstPerSecond: burstRate, pacedP99Ms: p99 } : {};
  } finally {
    await app.stop();
    await Promise.all(receivers.map((receiver) => receiver.close()));
  }
}

if (import.meta.main) {
  const number = (name: string, fallback: number) => {
    const value = Number(process.env[name]);
    return process.env[name] && Number.isFinite(value) && value > 0 ? value : fallback;
  };
  mkdirSync(join(ROOT, '.bench'), { recursive: true });
  const workDir = mkdtempSync(join(ROOT, '.bench', 'deliveries-'));
  try {
    await benchDeliveries(
      workDir,
      { duration: number('BENCH_DURATION', 5), events: number('BENCH_WEBHOOK_EVENTS', 3000) },
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
