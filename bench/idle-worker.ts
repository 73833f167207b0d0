// The idle worker with many clock subscriptions (docs/performance.md "The idle worker"): one
// clock customer with a saved card and a paid first period seeded through the services (the
// billing run's seeding), copied by SQL to N (test/helpers/multiply.ts), then the app (API +
// worker, a child process) started over it with nothing due; once the seeding's events are
// fanned out and IDLE_SETTLE_S more seconds passed, its /proc CPU (utime + stime, every
// thread) over IDLE_MEASURE_S seconds, in ms per second. IDLE_APP_ROOTS (comma-separated
// checkouts, default this one) runs the same database under each checkout's src/main.ts in
// turn, IDLE_ROUNDS times, so a change and the code before it are measured side by side.
// `node bench/idle-worker.ts` (IDLE_N, default 100000; IDLE_DIALECTS, default sqlite,postgres;
// IDLE_PG_URL, default postgres://postgres@127.0.0.1:5432/postgres). Measures; never fails on speed.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { multiplyClockCustomers } from '../test/helpers/multiply.ts';
import { seed } from './billing-run.ts';
import { BENCH_ENCRYPTION_KEY, SECRET as PAYSTACK_SECRET } from './notify.ts';
import { adminQuery } from './postgres.ts';
import { startServer, stopAllServers } from './servers.ts';

const ROOT = resolve(import.meta.dirname, '..');
const number = (name: string, fallback: number) => Number(process.env[name] ?? fallback);

/** CPU seconds of `pid`'s main thread (the event loop; the rest is V8's and libuv's threads), NaN without /proc. */
function mainThreadCpuSeconds(pid: number | undefined): number {
  try {
    const stat = readFileSync(`/proc/${pid}/task/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return NaN;
  }
}

/** Waits until every event is fanned out (the seeding's backlog), at most 10 minutes. */
async function fannedOut(databaseUrl: string): Promise<void> {
  const deadline = Date.now() + 600_000;
  const postgres = databaseUrl.startsWith('postgres');
  const client = postgres ? new pg.Client({ connectionString: databaseUrl }) : undefined;
  const sqlite = postgres ? undefined : new DatabaseSync(databaseUrl.replace(/^sqlite:/, ''));
  await client?.connect();
  try {
    for (;;) {
      const text = 'select count(*) as n from events where fanned_out_at is null';
      const n = client ? (await client.query(text)).rows[0].n : (sqlite!.prepare(text).get() as { n: number }).n;
      if (Number(n) === 0 || Date.now() > deadline) return;
      await sleep(500);
    }
  } finally {
    await client?.end();
    sqlite?.close();
  }
}

async function main() {
  const n = number('IDLE_N', 100_000);
  const settle = number('IDLE_SETTLE_S', 20);
  const measure = number('IDLE_MEASURE_S', 20);
  const rounds = number('IDLE_ROUNDS', 1);
  const roots = (process.env.IDLE_APP_ROOTS ?? ROOT).split(',').filter(Boolean);
  const dialects = (process.env.IDLE_DIALECTS ?? 'sqlite,postgres').split(',').filter(Boolean);
  const adminUrl = process.env.IDLE_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const dir = mkdtempSync(join(tmpdir(), 'bench-idle-'));
  try {
    for (const dialect of dialects) {
      const name = `billing_idle_${process.pid}`;
      let databaseUrl = `sqlite:${join(dir, 'idle.db')}`;
      if (dialect === 'postgres') {
        await adminQuery(adminUrl, `create database ${name}`);
        const url = new URL(adminUrl);
        url.pathname = `/${name}`;
        databaseUrl = url.toString();
      }
      try {
        const clockId = await seed(databaseUrl, 1);
        await multiplyClockCustomers(databaseUrl, clockId, n - 1);
        for (let round = 0; round < rounds; round++) {
          for (const root of roots) {
            const app = await startServer(
              join(root, 'src/main.ts'),
              {
                DATABASE_URL: databaseUrl,
                API_KEYS: 'bench_bootstrap_key_0123456789',
                PAYSTACK_SECRET_KEY: PAYSTACK_SECRET,
                DATA_ENCRYPTION_KEY: BENCH_ENCRYPTION_KEY,
                TEST_CLOCKS: 'true',
                LOG_LEVEL: 'warn',
              },
              '/api/health',
              { cpus: null },
            );
            try {
              await fannedOut(databaseUrl);
              await sleep(settle * 1000);
              const before = app.cpuSeconds();
              const mainBefore = mainThreadCpuSeconds(app.pid);
              await sleep(measure * 1000);
              const after = app.cpuSeconds();
              const mainPerSecond = ((mainThreadCpuSeconds(app.pid) - mainBefore) * 1000) / measure;
              const perSecond = before === undefined || after === undefined ? NaN : ((after - before) * 1000) / measure;
              console.log(
                `idle worker (${dialect}, ${n.toLocaleString('en-US')} clock subscriptions, ${root}): ` +
                  `${perSecond.toFixed(1)} ms CPU per second (main thread ${mainPerSecond.toFixed(1)}) ` +
                  `over ${measure} s after ${settle} s settling ` +
                  `(load ${loadavg()[0]!.toFixed(2)})`,
              );
            } finally {
              await app.stop();
            }
          }
        }
      } finally {
        if (dialect === 'postgres') await adminQuery(adminUrl, `drop database if exists ${name} with (force)`);
      }
    }
  } finally {
    await stopAllServers();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
