// The response cache's effect in one run: `GET /api/customers?limit=10` on the same
// database with the cache on (RESPONSE_CACHE_MB default) and off (RESPONSE_CACHE_MB=0), on
// SQLite and — when it answers — PostgreSQL, next to the bare Fastify route; on PostgreSQL also
// with another client committing all the time (every read then misses: the round trip's cost). Each server is a
// child process; its CPU time (utime + stime from /proc/<pid>/stat) over the measured rounds ÷
// its responses is the server-side CPU per request, the figure a loaded machine moves least.
// Rounds interleave the targets (as measure.ts does), so a change in background load hits all.
// Run alone: `node bench/response-cache.ts` (BENCH_DURATION, BENCH_ROUNDS, BENCH_CONNECTIONS,
// BENCH_PG_URL as in the main bench). Linux only (reads /proc); measures, never fails on speed.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import autocannon from 'autocannon';
import pg from 'pg';
import { seedCustomers, seedCustomersPostgres } from './seed.ts';
import { freePort } from './servers.ts';

const ROOT = resolve(import.meta.dirname, '..');
const API_KEY = 'bench_bootstrap_key_0123456789';
const ROWS = 1_000;
const PATH = '/api/customers?limit=10';
const CLOCK_TICKS = 100; // USER_HZ on Linux: /proc/<pid>/stat counts CPU time in 1/100 s

const duration = Number(process.env.BENCH_DURATION ?? 10);
const rounds = Number(process.env.BENCH_ROUNDS ?? 5);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 10);
const pgServer = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

interface Server {
  label: string;
  url: string;
  child: ChildProcess;
  path: string;
  headers: Record<string, string>;
  cpuTicks: number;
  responses: number;
  non2xx: number;
  seconds: number;
  /** Starts background work for this target's slices; returns its stop. */
  during?: () => () => Promise<void>;
}

const log = (line: string) => process.stdout.write(`${line}\n`);
const children = new Set<ChildProcess>();

/** CPU ticks (user + system) the process has used so far. */
function cpuTicks(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]); // utime, stime (fields 14 and 15 of stat)
}

async function start(label: string, script: string, env: Record<string, string>, path: string): Promise<Server> {
  const port = await freePort();
  const child = spawn(process.execPath, ['--disable-warning=ExperimentalWarning', join(ROOT, script)], {
    env: { ...process.env, ...env, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn', RATE_LIMIT_MAX: '0' },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  children.add(child);
  const url = `http://127.0.0.1:${port}`;
  const headers: Record<string, string> = script.includes('bare') ? {} : { authorization: `Bearer ${API_KEY}` };
  for (let tries = 0; tries < 600; tries += 1) {
    try {
      const res = await fetch(url + path, { headers });
      await res.arrayBuffer();
      if (res.ok) return { label, url, child, path, headers, cpuTicks: 0, responses: 0, non2xx: 0, seconds: 0 };
    } catch {
      // not listening yet
    }
    await sleep(100);
  }
  throw new Error(`${label} did not answer`);
}

async function load(server: Server, seconds: number, measured: boolean): Promise<void> {
  const stop = server.during?.();
  const before = cpuTicks(server.child.pid!);
  const result = await autocannon({
    url: server.url + server.path,
    connections,
    duration: seconds,
    headers: server.headers,
  });
  await stop?.();
  if (!measured) return;
  server.cpuTicks += cpuTicks(server.child.pid!) - before;
  server.responses += result.requests.total;
  server.non2xx += result.non2xx + result.errors;
  server.seconds += result.duration;
}

function report(servers: Server[]): void {
  const bare = servers[0]!;
  const bareRps = bare.responses / bare.seconds;
  for (const server of servers) {
    const rps = server.responses / server.seconds;
    const cpuUs = (server.cpuTicks / CLOCK_TICKS / server.responses) * 1e6;
    log(
      `  ${server.label.padEnd(36)} ${Math.round(rps).toString().padStart(6)} req/s  ` +
        `${(rps / bareRps).toFixed(2)}× bare  ${cpuUs.toFixed(0).padStart(4)} µs CPU/request` +
        (server.non2xx > 0 ? `  (${server.non2xx} errors!)` : ''),
    );
  }
}

async function measure(servers: Server[]): Promise<void> {
  for (const server of servers) await load(server, 2, false);
  for (let round = 0; round < rounds; round += 1) {
    for (const server of servers) await load(server, duration / rounds, true);
  }
  report(servers);
}

/**
 * Commits one writing transaction after another on `url` (`select txid_current()` takes an xid,
 * so each moves pg_current_snapshot()) until stopped: the cache's worst case, every read a miss.
 */
function commitLoop(url: string): () => Promise<void> {
  let running = true;
  const loop = (async () => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    while (running) await client.query('select txid_current()');
    await client.end();
  })();
  return async () => {
    running = false;
    await loop;
  };
}

async function main(workDir: string): Promise<void> {
  log(
    `response cache: ${PATH} over ${ROWS} customers, ${connections} connections, ${duration} s per target in ` +
      `${rounds} rounds; load average ${loadavg()[0]!.toFixed(2)} on ${cpus().length} CPUs`,
  );
  const file = join(workDir, 'customers.db');
  await seedCustomers(file, ROWS);
  const sqlite = { DATABASE_URL: `sqlite:${file}`, API_KEYS: API_KEY };
  const servers = [
    await start('bare Fastify GET /', 'bench/bare-server.ts', {}, '/'),
    await start('SQLite, cache on', 'src/main.ts', { ...sqlite, RESPONSE_CACHE_MB: '16' }, PATH),
    await start('SQLite, cache off', 'src/main.ts', { ...sqlite, RESPONSE_CACHE_MB: '0' }, PATH),
  ];
  log('SQLite:');
  await measure(servers);
  for (const server of servers.slice(1)) server.child.kill('SIGTERM');

  const database = `billing_cache_bench_${process.pid}`;
  const admin = new pg.Client({ connectionString: pgServer, connectionTimeoutMillis: 3_000 });
  try {
    await admin.connect();
  } catch {
    log(`PostgreSQL at ${pgServer} does not answer: skipped`);
    return;
  }
  await admin.query(`create database ${database}`);
  try {
    const url = new URL(pgServer);
    url.pathname = `/${database}`;
    await seedCustomersPostgres(url.href, ROWS);
    const env = { DATABASE_URL: url.href, API_KEYS: API_KEY };
    const busyOn = await start(
      'PostgreSQL, cache on, busy cluster',
      'src/main.ts',
      { ...env, RESPONSE_CACHE_MB: '16' },
      PATH,
    );
    const busyOff = await start(
      'PostgreSQL, cache off, busy cluster',
      'src/main.ts',
      { ...env, RESPONSE_CACHE_MB: '0' },
      PATH,
    );
    busyOn.during = () => commitLoop(url.href);
    busyOff.during = busyOn.during;
    const pgServers = [
      servers[0]!,
      await start('PostgreSQL, cache on', 'src/main.ts', { ...env, RESPONSE_CACHE_MB: '16' }, PATH),
      await start('PostgreSQL, cache off', 'src/main.ts', { ...env, RESPONSE_CACHE_MB: '0' }, PATH),
      busyOn,
      busyOff,
    ];
    for (const server of pgServers) Object.assign(server, { cpuTicks: 0, responses: 0, non2xx: 0, seconds: 0 });
    log('PostgreSQL (one instance):');
    await measure(pgServers);
    for (const server of pgServers.slice(1)) {
      server.child.kill('SIGTERM');
      await once(server.child, 'exit');
    }
  } finally {
    await admin.query(`drop database if exists ${database} with (force)`);
    await admin.end();
  }
}

mkdirSync(join(ROOT, '.bench'), { recursive: true });
const workDir = mkdtempSync(join(ROOT, '.bench', 'cache-'));
try {
  await main(workDir);
} finally {
  for (const child of children) if (child.exitCode === null) child.kill('SIGTERM');
  rmSync(workDir, { recursive: true, force: true });
}
