// A/B of the notify scenario on PostgreSQL (docs/performance.md): this checkout against another
// one (BENCH_AB_BEFORE=<path of a checkout with node_modules>, e.g. a `git worktree add` of an
// older commit), in ONE run. Each app gets its own fresh database `billing_ab_<pid>_<a|b>` on
// BENCH_PG_URL's server; both are started (API + worker), their payers introduced, then signed
// Paystack charge.success events are posted to one app at a time in interleaved rounds, so a
// change in the machine's load hits both alike. Per event it prints the app's CPU (its process,
// all threads) and the round trips and statements the app counted (its /metrics). PostgreSQL's
// own CPU is left out: on a shared machine other sessions' backends come and go meanwhile. Servers are pinned to
// CPU 0 and the load to the rest where taskset exists. Measures; never fails on speed.
//   BENCH_AB_BEFORE=/tmp/pg-before node bench/postgres-ab.ts
import { resolve } from 'node:path';
import autocannon from 'autocannon';
import { introducePayers, notifyRequest } from './notify.ts';
import { adminQuery, type App, startApp, traffic } from './postgres.ts';
import { pinApart, stopAllServers } from './servers.ts';

const DEFAULT_SERVER_URL = 'postgres://postgres@127.0.0.1:5432/postgres';

interface Tally {
  events: number;
  appCpu: number;
  roundTrips: number;
  statements: number;
  workerRoundTrips: number;
}

/** Posts events to `app` for `seconds` over `connections`; adds what it cost to `tally`. */
async function slice(app: App, connections: number, seconds: number, tally: Tally): Promise<void> {
  const before = { traffic: await traffic(app), app: app.cpuSeconds() ?? 0 };
  let events = 0;
  const instance = autocannon({ url: app.url, connections, duration: seconds, requests: [notifyRequest()] });
  instance.on('response', (_client, status) => {
    if (status === 200) events += 1;
  });
  await instance;
  const after = { traffic: await traffic(app), app: app.cpuSeconds() ?? 0 };
  tally.events += events;
  tally.appCpu += after.app - before.app;
  tally.roundTrips += after.traffic.roundTrips - before.traffic.roundTrips;
  tally.statements += after.traffic.statements - before.traffic.statements;
  tally.workerRoundTrips += after.traffic.workerRoundTrips - before.traffic.workerRoundTrips;
}

function perEvent(label: string, tally: Tally, seconds: number): string {
  const per = (n: number) => n / tally.events;
  return (
    `${label.padEnd(8)} ${(tally.events / seconds).toFixed(0).padStart(6)} events/s | app CPU per event ` +
    `${(per(tally.appCpu) * 1000).toFixed(3)} ms | ` +
    `round trips ${per(tally.roundTrips).toFixed(2)} (worker ${per(tally.workerRoundTrips).toFixed(2)}), ` +
    `statements ${per(tally.statements).toFixed(2)} | ${tally.events} events`
  );
}

async function main(): Promise<void> {
  const beforeRoot = process.env.BENCH_AB_BEFORE;
  if (!beforeRoot) throw new Error('set BENCH_AB_BEFORE to the other checkout (with node_modules)');
  const serverUrl = process.env.BENCH_PG_URL?.trim() || DEFAULT_SERVER_URL;
  const seconds = Number(process.env.BENCH_DURATION ?? 30);
  const rounds = Number(process.env.BENCH_ROUNDS ?? 6);
  const connections = Number(process.env.BENCH_CONNECTIONS ?? 20);
  const pinning = pinApart();
  const roots = { before: resolve(beforeRoot), now: resolve(import.meta.dirname, '..') };
  const names = { before: `billing_ab_${process.pid}_a`, now: `billing_ab_${process.pid}_b` };
  const urlOf = (name: string) => {
    const url = new URL(serverUrl);
    url.pathname = `/${name}`;
    return url.toString();
  };
  for (const name of Object.values(names)) await adminQuery(serverUrl, `create database ${name}`);
  try {
    const apps = {
      before: await startApp(urlOf(names.before), {}, roots.before),
      now: await startApp(urlOf(names.now), {}, roots.now),
    };
    for (const app of Object.values(apps)) await introducePayers(app.url);
    const tallies = Object.fromEntries(
      Object.keys(apps).map((key) => [
        key,
        { events: 0, appCpu: 0, roundTrips: 0, statements: 0, workerRoundTrips: 0 },
      ]),
    ) as Record<keyof typeof apps, Tally>;
    for (const [key, app] of Object.entries(apps)) await slice(app, connections, 3, { ...tallies[key as 'now'] });
    for (let round = 1; round <= rounds; round += 1) {
      // Alternate which goes first, so neither always follows the other's after-effects.
      const order = round % 2 === 1 ? (['before', 'now'] as const) : (['now', 'before'] as const);
      for (const key of order) await slice(apps[key], connections, seconds / rounds, tallies[key]);
      process.stdout.write(`${round} `);
    }
    process.stdout.write('\n');
    process.stdout.write(
      `notify on PostgreSQL, ${connections} connections, ${seconds} s each in ${rounds} interleaved rounds` +
        `${pinning ? `, apps on CPU ${pinning.server}, load on ${pinning.load}` : ''}:\n`,
    );
    process.stdout.write(`${perEvent(`before`, tallies.before, seconds)}   (${roots.before})\n`);
    process.stdout.write(`${perEvent(`now`, tallies.now, seconds)}   (${roots.now})\n`);
    process.stdout.write(
      `now ÷ before, app CPU per event: ${(tallies.now.appCpu / tallies.now.events / (tallies.before.appCpu / tallies.before.events)).toFixed(3)}\n`,
    );
  } finally {
    await stopAllServers();
    for (const name of Object.values(names)) {
      await adminQuery(serverUrl, `drop database if exists ${name} with (force)`).catch(() => {});
    }
  }
}

await main();
