// Graceful shutdown (SPEC §7): SIGTERM stops accepting, finishes in-flight requests and the
// worker's in-flight work (bounded), closes the database and exits 0. The process tests run
// `billing serve` / `billing worker` for real over a SQLite file (in both test passes, as the
// CLI tests do: the CLI takes its database from DATABASE_URL only); the drain tests run the
// real Worker in-process on the test database.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { DatabaseSync } from 'node:sqlite';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, type TestContext, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { drain } from '../src/server.ts';
import type { Job } from '../src/worker/job.ts';
import { Worker } from '../src/worker/runner.ts';
import { buildTestApp } from './helpers/app.ts';
import { freePort } from './helpers/service.ts';

const BIN = fileURLToPath(new URL('../bin/billing.js', import.meta.url));
const KEY = 'shutdown_test_key_0123456789abcdef';
const quiet = { info: () => {}, warn: () => {}, error: () => {} };

interface LogLine {
  msg?: string;
  req?: { url?: string; method?: string };
  [field: string]: unknown;
}

/** A running `billing …` process whose JSON log lines can be awaited. */
interface Service {
  child: ChildProcess;
  /** Resolves with the first log line (past or future) matching `match`. */
  waitForLog(match: (line: LogLine) => boolean): Promise<LogLine>;
  exited: Promise<number | null>;
}

function startService(t: TestContext, args: string[], env: Record<string, string>): Service {
  const child = spawn(process.execPath, [BIN, ...args], {
    env: {
      PATH: process.env.PATH ?? '',
      // Start-up speed only: the suite's compile cache (scripts/test.ts), when it has one.
      ...(process.env.NODE_COMPILE_CACHE ? { NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE } : {}),
      LOG_LEVEL: 'info',
      API_KEYS: KEY,
      RATE_LIMIT_MAX: '0',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = once(child, 'exit').then(([code]) => code as number | null);
  t.after(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  const lines: LogLine[] = [];
  const waiters: { match: (line: LogLine) => boolean; resolve: (line: LogLine) => void }[] = [];
  let buffer = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    buffer += chunk;
    let newline: number;
    while ((newline = buffer.indexOf('\n')) >= 0) {
      const text = buffer.slice(0, newline);
      buffer = buffer.slice(newline + 1);
      let line: LogLine;
      try {
        line = JSON.parse(text) as LogLine;
      } catch {
        continue;
      }
      lines.push(line);
      for (const waiter of [...waiters]) {
        if (waiter.match(line)) {
          waiters.splice(waiters.indexOf(waiter), 1);
          waiter.resolve(line);
        }
      }
    }
  });
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  const waitForLog = (match: (line: LogLine) => boolean) =>
    new Promise<LogLine>((resolve, reject) => {
      const seen = lines.find(match);
      if (seen) return resolve(seen);
      waiters.push({ match, resolve });
      void exited.then((code) => reject(new Error(`process exited (${code}) first; stderr: ${stderr}`)));
    });
  return { child, waitForLog, exited };
}

function tempDatabase(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'billing-shutdown-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return join(dir, 'billing.db');
}

/** Reads one HTTP response from `socket`: its status and whether the server closed the connection. */
function readResponse(socket: Socket): Promise<{ status: number; raw: string; closed: boolean }> {
  return new Promise((resolve, reject) => {
    let raw = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      raw += chunk;
    });
    socket.on('error', reject);
    socket.on('close', () => resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(raw)?.[1]), raw, closed: true }));
  });
}

describe('graceful shutdown', { concurrency: true }, () => {
  test('SIGTERM: new connections are refused, the in-flight request completes, the database is closed, exit 0', async (t) => {
    const path = tempDatabase(t);
    const metricsPort = await freePort();
    const service = startService(t, ['serve'], {
      DATABASE_URL: `sqlite:${path}`,
      PORT: '0',
      METRICS_PORT: String(metricsPort),
    });
    const listening = await service.waitForLog((line) => /Server listening at/.test(line.msg ?? ''));
    const port = Number(/:(\d+)$/.exec(listening.msg ?? '')?.[1]);
    // The metrics server starts after the API's listener: wait for it, not for the clock.
    await service.waitForLog((line) => line.msg === 'metrics listening');
    const metrics = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
    assert.equal(metrics.status, 200);
    assert.match(await metrics.text(), /billing_http_requests_total|# HELP billing_rows/);

    // A request whose body is still on its way when SIGTERM arrives.
    const body = JSON.stringify({ email: 'in-flight@example.com', name: 'Drained' });
    const socket = connect(port, '127.0.0.1');
    await once(socket, 'connect');
    const response = readResponse(socket);
    socket.write(
      `POST /api/customers HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${KEY}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body.slice(0, 10)}`,
    );
    await service.waitForLog((line) => line.msg === 'incoming request' && line.req?.method === 'POST');

    service.child.kill('SIGTERM');
    await service.waitForLog((line) => line.msg === 'shutting down');
    await service.waitForLog((line) => line.msg === 'draining: no new requests are served');
    // A new request is not served: its connection is refused (listener closed) or, if it got
    // in just before, it is answered 503 so the client or load balancer goes elsewhere.
    const refused = await fetch(`http://127.0.0.1:${port}/api/health`).then(
      (res) => `status ${res.status}`,
      (error: Error & { cause?: { code?: string } }) => error.cause?.code ?? error.message,
    );
    assert.ok(['ECONNREFUSED', 'status 503'].includes(refused), refused);

    socket.write(body.slice(10)); // not end(): the server must close this keep-alive connection itself
    const { status, raw } = await response;
    assert.equal(status, 201, raw);
    assert.match(raw, /\r\nconnection: close\r\n/i, 'the connection is closed after the in-flight response');
    assert.equal(await service.exited, 0);

    const db = new DatabaseSync(path);
    t.after(() => db.close());
    const row = db.prepare('select email from customers').get() as { email: string } | undefined;
    assert.equal(row?.email, 'in-flight@example.com');
  });

  test('SIGTERM on `billing worker` exits 0', async (t) => {
    const service = startService(t, ['worker'], { DATABASE_URL: `sqlite:${tempDatabase(t)}` });
    await service.waitForLog((line) => line.msg === 'worker started');
    service.child.kill('SIGTERM');
    assert.equal(await service.exited, 0);
  });
});

/** A job that, on its first run, waits until released; reports when it started and ended. */
function blockingJob() {
  let started!: () => void;
  let release!: () => void;
  const events: string[] = [];
  const hasStarted = new Promise<void>((resolve) => {
    started = resolve;
  });
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  let runs = 0;
  const job: Job = {
    name: 'blocking',
    batchSize: 1,
    run: async () => {
      runs += 1;
      if (runs > 1) return 0;
      started();
      await released;
      events.push('job finished');
      return 0;
    },
  };
  return { job, hasStarted, release, events };
}

test('drain waits for the worker batch in flight, then closes the database', async (t) => {
  const app = await buildTestApp(t);
  const { job, hasStarted, release, events } = blockingJob();
  const worker = new Worker(app.deps, [job], quiet, []);
  worker.start();
  await hasStarted;

  const drained = drain({ worker, deps: app.deps }, 10_000, quiet).then((outcome) => {
    events.push(`drained: ${outcome}`);
    return outcome;
  });
  // Let drain() reach its wait; the job is still holding it.
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(events, []);
  release();
  assert.equal(await drained, 'drained');
  assert.deepEqual(events, ['job finished', 'drained: drained']);
  await assert.rejects(app.deps.db.selectFrom('customers').selectAll().execute(), 'the database is closed');
});

test('drain is bounded: work that never finishes is cut after the timeout', async (t) => {
  const app = await buildTestApp(t);
  const { job, hasStarted, release } = blockingJob();
  t.after(release);
  const worker = new Worker(app.deps, [job], quiet, []);
  worker.start();
  await hasStarted;
  assert.equal(await drain({ worker, deps: app.deps }, 50, quiet), 'timed_out');
});
