// Whole service processes for the scale-out and crash tests (SPEC §7): `billing serve` as a
// real child process on a real port, over a database the test owns, stopped after the test.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { TEST_DATABASE_URL } from './database.ts';
import { testCertificate } from './webhook-receiver.ts';

const BIN = fileURLToPath(new URL('../../bin/billing.js', import.meta.url));

export interface ServiceProcess {
  url: string;
  child: ChildProcess;
  /** Everything the process wrote to stdout and stderr so far (pino JSON lines). */
  output(): string;
  /** Resolves with the exit code (or signal name) once the process has exited. */
  exited: Promise<number | string>;
}

/**
 * Starts `billing serve` (API + worker) with `env` on a free port and waits until it says it
 * is ready (its `'ready'` message over an IPC channel, sent once it listens), then checks that
 * `/api/health` answers 200. No polling and no deadline of its own beyond `timeoutMs` (a bound
 * for a process that hangs, far above a start-up on a loaded machine; the test's own timeout
 * is usually shorter). Killed with SIGKILL after the test if still running. Throws with the
 * process output when it exits or hangs before it is ready.
 */
export async function startService(
  t: TestContext,
  env: Record<string, string>,
  timeoutMs = 300_000,
): Promise<ServiceProcess> {
  const port = await freePort();
  const child = spawn(process.execPath, [BIN, 'serve'], {
    env: {
      PATH: process.env.PATH ?? '',
      // Start-up speed only: the suite's compile cache (scripts/test.ts), when it has one.
      ...(process.env.NODE_COMPILE_CACHE ? { NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE } : {}),
      LOG_LEVEL: 'warn',
      ...env,
      PORT: String(port),
      HOST: '127.0.0.1',
    },
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  let output = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    output += chunk;
  });
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    output += chunk;
  });
  const exited = new Promise<number | string>((resolve) => {
    child.on('exit', (code, signal) => resolve(code ?? signal ?? 'unknown'));
  });
  t.after(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    return exited;
  });
  let hung: NodeJS.Timeout | undefined;
  try {
    await new Promise<void>((resolve, reject) => {
      child.on('message', (message) => {
        if (message === 'ready') resolve();
      });
      void exited.then(() => reject(new Error(`service exited before it was ready:\n${output}`)));
      hung = setTimeout(() => reject(new Error(`service not ready after ${timeoutMs} ms:\n${output}`)), timeoutMs);
    });
  } finally {
    clearTimeout(hung);
  }
  child.disconnect(); // the channel served its purpose; the test talks HTTP
  const url = `http://127.0.0.1:${port}`;
  const health = await fetch(`${url}/api/health`);
  const body = await health.text();
  if (health.status !== 200) throw new Error(`service ready but /api/health answered ${health.status}: ${body}`);
  return { url, child, output: () => output, exited };
}

/** A port nobody listens on right now (the OS picks it). */
export async function freePort(): Promise<number> {
  const { createServer } = await import('node:net');
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/**
 * A database of the test's own that separate processes can open by URL: a fresh PostgreSQL
 * database (created on TEST_DATABASE_URL's server, dropped after) when the suite runs on
 * PostgreSQL, else a SQLite file in a temp dir. Returns its DATABASE_URL.
 */
export async function ownDatabaseUrl(t: TestContext): Promise<string> {
  if (!TEST_DATABASE_URL) {
    const dir = mkdtempSync(join(tmpdir(), 'billing-proc-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    return `sqlite:${join(dir, 'billing.db')}`;
  }
  const name = `billing_proc_${process.pid}_${Math.random().toString(36).slice(2, 10)}`;
  const admin = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  t.after(async () => {
    const cleanup = new pg.Client({ connectionString: TEST_DATABASE_URL });
    await cleanup.connect();
    try {
      await cleanup.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    } finally {
      await cleanup.end();
    }
  });
  const url = new URL(TEST_DATABASE_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

/** Polls `check` every 50 ms until it returns true; throws `message` after `timeoutMs`. */
export async function eventually(check: () => Promise<boolean>, timeoutMs: number, message: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${message} (not within ${timeoutMs} ms)`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * The test receivers' self-signed certificate as a PEM file, for a service process's
 * NODE_EXTRA_CA_CERTS (Node reads it at start-up; certificate checks stay on). Removed after the test.
 */
export function receiverCaFile(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'billing-ca-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'ca.pem');
  writeFileSync(file, testCertificate().cert);
  return file;
}
