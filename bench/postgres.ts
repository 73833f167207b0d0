// Bench scenarios on PostgreSQL (docs/performance.md): the read and notify scenarios of the SQLite
// bench, on a fresh database `billing_bench_<pid>` this file CREATEs and DROPs on the server at
// BENCH_PG_URL (default postgres://postgres@127.0.0.1:5432/postgres), first on one instance,
// then on two: two `npm start` processes (API + worker each, RATE_LIMIT_MAX=0) on the one
// database, with no balancer — autocannon splits its connections round-robin over both ports.
// The two-instance scenarios need a core per instance apart from the load generator's: with
// CPUs pinned (npm run bench) and at least 4 of them, instance 1 runs on CPU 0, instance 2 on
// CPU 1 and the load on the rest; with fewer CPUs they are left out, and the report says why
// (on 2 cores a second instance could only take CPU from the first, the load generator or
// PostgreSQL: its "scaling" would measure that contention, not scaling).
//   - read: GET /api/customers over BENCH_PG_ROWS (default 100,000) seeded customers;
//   - notify: POST /api/notify with distinct signed Paystack charge.success events.
// All targets (and the bare Fastify route they are compared with) are measured in interleaved
// rounds (measure.ts). Prints req/s, p50/p99, the ratio to the bare route and the scaling ratio
// two instances / one, and the round trips per provider event (the request's and the worker's
// part apart). PostgreSQL itself is never pinned. Skipped, with a note, when PostgreSQL does
// not answer.
// Measures; never fails on speed. Runs inside `npm run bench`, or alone: `node bench/postgres.ts`.
import { readdirSync, readFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import autocannon from 'autocannon';
import pg from 'pg';
import { type Measurement, measureAll, type Schedule, type Target } from './measure.ts';
import {
  BENCH_ENCRYPTION_KEY,
  chargeBody,
  introducePayers,
  notifyRequest,
  SECRET as PAYSTACK_SECRET,
  signed,
} from './notify.ts';
import { seedCustomersPostgres } from './seed.ts';
import {
  allowedCpus,
  freePort,
  pinLoad,
  pinnedServerCpus,
  type RunningServer,
  type ServerOptions,
  startServer,
  stopAllServers,
} from './servers.ts';

const ROOT = resolve(import.meta.dirname, '..');
const API_KEY = 'bench_bootstrap_key_0123456789';
const DEFAULT_SERVER_URL = 'postgres://postgres@127.0.0.1:5432/postgres';
const DEFAULT_ROWS = 100_000;

interface Scenario extends Target {
  label: string;
  /** For a two-instance target: the index of its one-instance twin (for the scaling ratio). */
  oneInstance?: number;
}

const count = (n: number) => Math.round(n).toLocaleString('en-US');

function loadNote(): string {
  const load = loadavg()[0]!;
  const busy = load > cpus().length * 0.5 ? ' — the machine was busy; expect noisy figures' : '';
  return `load average ${load.toFixed(2)} on ${cpus().length} CPUs${busy}`;
}

/** Runs `text` on the server at `url` with a one-off client (3 s connect timeout). */
export async function adminQuery(url: string, text: string): Promise<pg.QueryResult> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3_000 });
  await client.connect();
  try {
    return await client.query(text);
  } finally {
    await client.end();
  }
}

export interface App extends RunningServer {
  /** `http://127.0.0.1:<port>/metrics` of the instance (its round-trip counters). */
  metricsUrl: string;
}

/**
 * One instance of the app (`npm start`: API + worker) on the PostgreSQL database `databaseUrl`;
 * `root` is the checkout whose src/main.ts runs (default: this one).
 */
export async function startApp(databaseUrl: string, options: ServerOptions = {}, root = ROOT): Promise<App> {
  const metricsPort = await freePort();
  const server = await startServer(
    join(root, 'src/main.ts'),
    {
      DATABASE_URL: databaseUrl,
      API_KEYS: API_KEY,
      PAYSTACK_SECRET_KEY: PAYSTACK_SECRET,
      DATA_ENCRYPTION_KEY: BENCH_ENCRYPTION_KEY,
      LOG_LEVEL: 'warn',
      // Rate limiting would cap every figure; off for the bench.
      RATE_LIMIT_MAX: '0',
      METRICS_PORT: String(metricsPort),
      // BENCH_CPU_PROF=<dir>: each instance writes a V8 CPU profile there when it stops.
      ...(process.env.BENCH_CPU_PROF
        ? { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${process.env.BENCH_CPU_PROF}` }
        : {}),
    },
    '/api/health',
    options,
  );
  return { ...server, metricsUrl: `http://127.0.0.1:${metricsPort}/metrics` };
}

export interface Traffic {
  roundTrips: number;
  statements: number;
  /** The part of roundTrips its worker sent (jobs, webhook fan-out and dispatch). */
  workerRoundTrips: number;
}

/** What an instance has sent to PostgreSQL so far (its /metrics counters). */
export async function traffic(app: App): Promise<Traffic> {
  const text = await (await fetch(app.metricsUrl)).text();
  const value = (name: string) => {
    const match = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
    if (!match) throw new Error(`${app.metricsUrl} shows no ${name}`);
    return Number(match[1]);
  };
  return {
    roundTrips: value('billing_db_round_trips_total'),
    statements: value('billing_db_statements_total'),
    workerRoundTrips: value('billing_db_worker_round_trips_total'),
  };
}

/** Round trips and statements per provider event, counted by one instance over a notify load. */
export interface TripsPerEvent {
  connections: number;
  events: number;
  roundTrips: number;
  statements: number;
  /** The worker's part of roundTrips. */
  workerRoundTrips: number;
  /** CPU ms per event of the instance (all threads), if /proc tells. */
  appCpuMs?: number;
  /** CPU ms per event of every PostgreSQL server process on this machine, if /proc tells. */
  postgresCpuMs?: number;
}

/** CPU seconds of every process named `postgres` (the server and its backends), or undefined without /proc. */
export function postgresCpuSeconds(): number | undefined {
  try {
    let total = 0;
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        if (readFileSync(`/proc/${entry}/comm`, 'utf8').trim() !== 'postgres') continue;
        const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
        const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        total += (Number(fields[11]) + Number(fields[12])) / 100;
      } catch {
        // exited meanwhile
      }
    }
    return total;
  } catch {
    return undefined;
  }
}

/**
 * Posts distinct signed charge.success events to `app` over `connections` for `seconds`
 * and divides what the instance sent to PostgreSQL meanwhile (its worker's polls included)
 * by the events it acknowledged.
 */
async function tripsPerEvent(app: App, connections: number, seconds: number): Promise<TripsPerEvent> {
  const before = await traffic(app);
  const cpuBefore = { app: app.cpuSeconds(), postgres: postgresCpuSeconds() };
  let events = 0;
  const instance = autocannon({ url: app.url, connections, duration: seconds, requests: [notifyRequest()] });
  instance.on('response', (_client, status) => {
    if (status === 200) events += 1;
  });
  await instance;
  const after = await traffic(app);
  const cpuAfter = { app: app.cpuSeconds(), postgres: postgresCpuSeconds() };
  const perEvent = (a: number | undefined, b: number | undefined) =>
    a === undefined || b === undefined ? {} : { ms: ((b - a) * 1000) / events };
  const appCpu = perEvent(cpuBefore.app, cpuAfter.app).ms;
  const postgresCpu = perEvent(cpuBefore.postgres, cpuAfter.postgres).ms;
  return {
    ...(appCpu === undefined ? {} : { appCpuMs: appCpu }),
    ...(postgresCpu === undefined ? {} : { postgresCpuMs: postgresCpu }),
    connections,
    events,
    roundTrips: (after.roundTrips - before.roundTrips) / events,
    statements: (after.statements - before.statements) / events,
    workerRoundTrips: (after.workerRoundTrips - before.workerRoundTrips) / events,
  };
}

/** What the PostgreSQL section measured (for a summary across sections); undefined when skipped. */
export interface PostgresBenchResult {
  bare: Measurement;
  notifyOneInstance: Measurement;
  /** Undefined when the two-instance scenarios were left out (fewer than 4 CPUs, see the header). */
  notifyTwoInstances?: Measurement;
  /** Events per second into one instance (notifyOneInstance.rps). */
  notifyOneRps: number;
  /** PostgreSQL round trips per event under the notify load on one instance (≤ 4). */
  roundTripsPerEvent?: number;
  /** Statements per event (several may share a round trip, db/pg-traffic.ts). */
  statementsPerEvent?: number;
  /** CPU ms per event of the instance under the notify load (all threads). */
  appCpuMsPerEvent?: number;
  /** CPU ms per event of PostgreSQL's processes meanwhile (all of them on this machine). */
  postgresCpuMsPerEvent?: number;
}

/** Fails early when an instance does not list exactly `rows` customers. */
async function checkList(app: RunningServer, rows: number): Promise<void> {
  const response = await fetch(`${app.url}/api/customers`, { headers: { authorization: `Bearer ${API_KEY}` } });
  const body = (await response.json()) as { data?: unknown[]; meta?: { total?: number } };
  if (response.status !== 200 || body.meta?.total !== rows || body.data?.length !== Math.min(rows, 10)) {
    throw new Error(`GET /api/customers answered ${response.status} ${JSON.stringify(body).slice(0, 200)}`);
  }
}

/** Fails early when an instance does not take a signed event with 200. */
async function checkNotify(app: RunningServer): Promise<void> {
  const event = chargeBody();
  const notify = await fetch(`${app.url}/api/notify?p=paystack`, {
    method: 'POST',
    body: event,
    headers: signed(event),
  });
  const text = await notify.text();
  if (notify.status !== 200) throw new Error(`POST /api/notify answered ${notify.status} ${text.slice(0, 200)}`);
}

function table(scenarios: Scenario[], results: Measurement[], bare: Measurement): string {
  const header = ['scenario', 'req/s', 'p50 ms', 'p99 ms', 'rps vs bare', 'p99 vs bare', 'rps 2 vs 1 instance'];
  const lines = scenarios.map((scenario, i) => {
    const result = results[i]!;
    const single = scenario.oneInstance === undefined ? undefined : results[scenario.oneInstance]!;
    return [
      scenario.label,
      count(result.rps),
      result.p50Ms.toFixed(2),
      result.p99Ms.toFixed(2),
      `${(result.rps / bare.rps).toFixed(2)}×`,
      `${(result.p99Ms / bare.p99Ms).toFixed(2)}×`,
      single ? `${(result.rps / single.rps).toFixed(2)}×` : '',
    ];
  });
  const widths = header.map((title, i) => Math.max(title.length, ...lines.map((line) => line[i]!.length)));
  const format = (cells: string[]) =>
    cells.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join(' | ');
  return [format(header), widths.map((w) => '-'.repeat(w)).join('-|-'), ...lines.map(format)].join('\n');
}

/** What the notify load left in the database: inbox rows, processed ones, payments. */
async function stored(databaseUrl: string) {
  const one = async (query: string) => Number((await adminQuery(databaseUrl, query)).rows[0].n);
  return {
    inbox: await one('select count(*) as n from provider_events'),
    processed: await one("select count(*) as n from provider_events where status = 'processed'"),
    payments: await one('select count(*) as n from payments'),
  };
}

/** Where the instances run (see the header): `two` is undefined when the two-instance scenarios are left out. */
interface Placement {
  two?: { first: ServerOptions; second: ServerOptions; load?: string };
  note: string;
}

/** CPUs the two-instance scenarios need: one per instance, the rest for the load generator and PostgreSQL. */
const TWO_INSTANCE_CPUS = 4;

function placeInstances(): Placement {
  const n = cpus().length;
  const pinned = pinnedServerCpus();
  if (n < TWO_INSTANCE_CPUS) {
    return {
      note:
        `two-instance scenarios left out: ${n} CPUs. ` +
        (pinned !== undefined
          ? `The instance runs on CPU ${pinned} and the load generator on the other; `
          : 'Nothing is pinned; ') +
        `a second instance would get no core of its own (PostgreSQL floats over all of them too), so ` +
        `"2 instances ÷ 1" would measure contention, not scaling. It needs ≥ ${TWO_INSTANCE_CPUS} CPUs.`,
    };
  }
  if (pinned === undefined) {
    return {
      two: { first: { cpus: null }, second: { cpus: null } },
      note: `CPU placement: nothing pinned (no taskset pinning in this run): load, PostgreSQL and both instances share ${n} CPUs.`,
    };
  }
  const load = `2-${n - 1}`;
  return {
    two: { first: { cpus: '0' }, second: { cpus: '1' }, load },
    note:
      `CPU placement (taskset): instance 1 on CPU 0 (the 1-instance scenarios too), instance 2 on CPU 1, ` +
      `the load generator on CPUs ${load}; PostgreSQL unpinned.`,
  };
}

/**
 * Runs the PostgreSQL scenarios with `schedule` (connections are the total over both
 * instances); writes the report with `log`. Creates, seeds and drops its own database, and
 * starts and stops its own servers. Returns without measuring (after logging why) when
 * PostgreSQL does not answer.
 */
export async function benchPostgres(
  schedule: Schedule,
  log: (line: string) => void,
): Promise<PostgresBenchResult | undefined> {
  const serverUrl = process.env.BENCH_PG_URL?.trim() || DEFAULT_SERVER_URL;
  const rowsText = process.env.BENCH_PG_ROWS?.trim();
  const rows = rowsText ? Math.round(Number(rowsText)) : DEFAULT_ROWS;
  if (!Number.isFinite(rows) || rows < 10) throw new Error(`BENCH_PG_ROWS must be a number ≥ 10 (got "${rowsText}")`);
  // Taken before this section adds its own load (later it would mostly measure the bench itself).
  const loadBefore = loadNote();
  const shownServer = new URL(serverUrl);
  shownServer.password = '';
  try {
    await adminQuery(serverUrl, 'select 1');
  } catch (error) {
    log(
      `\nPostgreSQL scenarios skipped: ${shownServer.host} did not answer ` +
        `(${error instanceof Error ? error.message : String(error)}); set BENCH_PG_URL to run them.`,
    );
    return undefined;
  }

  const databaseName = `billing_bench_${process.pid}`;
  const database = new URL(serverUrl);
  database.pathname = `/${databaseName}`;
  const databaseUrl = database.toString();
  await adminQuery(serverUrl, `create database ${databaseName}`);
  const servers: RunningServer[] = [];
  const placement = placeInstances();
  const loadCpusBefore = allowedCpus(process.pid);
  let result: PostgresBenchResult | undefined;
  try {
    process.stdout.write(`\npostgres: seeding ${count(rows)} customers in ${databaseName} … `);
    const seeded = await seedCustomersPostgres(databaseUrl, rows);
    const two = placement.two !== undefined;
    process.stdout.write(`${(seeded.insertMs / 1000).toFixed(1)} s; starting ${two ? 2 : 1} instance(s) … `);
    if (placement.two?.load !== undefined && !pinLoad(placement.two.load)) {
      throw new Error(`could not pin the load generator to CPUs ${placement.two.load}`);
    }
    const bare = await startServer(join(ROOT, 'bench/bare-server.ts'), {}, '/');
    servers.push(bare);
    const first = await startApp(databaseUrl, placement.two?.first);
    servers.push(first);
    const second = placement.two ? await startApp(databaseUrl, placement.two.second) : undefined;
    if (second) servers.push(second);
    const apps = second ? [first, second] : [first];
    for (const app of apps) await checkList(app, rows);
    for (const app of apps) await checkNotify(app);
    // Every measured event is a returning payer's (notify.ts introducePayers).
    const introduced = await introducePayers(first.url);

    const auth = { authorization: `Bearer ${API_KEY}` };
    const both = apps.map((app) => app.url);
    const scenarios: Scenario[] = [
      { label: 'bare Fastify GET / (baseline)', url: bare.url, path: '/' },
      {
        label: `GET /api/customers @ ${count(rows)}, 1 instance`,
        url: first.url,
        path: '/api/customers',
        headers: auth,
      },
      { label: 'POST /api/notify charge.success, 1 instance', url: first.url, path: '/', requests: [notifyRequest()] },
    ];
    if (second) {
      scenarios.push(
        {
          label: `GET /api/customers @ ${count(rows)}, 2 instances`,
          url: both,
          path: '/api/customers',
          headers: auth,
          oneInstance: 1,
        },
        {
          label: 'POST /api/notify charge.success, 2 instances',
          url: both,
          path: '/',
          requests: [notifyRequest()],
          oneInstance: 2,
        },
      );
    }
    process.stdout.write(`measuring ${scenarios.length} scenarios in ${schedule.rounds} interleaved rounds … `);
    const results = await measureAll(scenarios, schedule, (round) => process.stdout.write(`${round} `));
    process.stdout.write('counting round trips … ');
    // Under the bench's load (requests share statements) and one request at a time (none to share with).
    const loaded = await tripsPerEvent(first, schedule.connections, Math.max(2, schedule.duration / schedule.rounds));
    const alone = await tripsPerEvent(first, 1, 2);
    log('done');
    await Promise.all(servers.map((server) => server.stop()));
    const after = await stored(databaseUrl);

    const [bareResult, listOne, notifyOne, listTwo, notifyTwo] = results as [
      Measurement,
      Measurement,
      Measurement,
      Measurement | undefined,
      Measurement | undefined,
    ];
    log('');
    log(
      `PostgreSQL scenarios (${shownServer.host}, ${schedule.connections} connections in total${two ? ' — split over both ports for 2 instances —' : ''} ` +
        `${schedule.duration} s in ${schedule.rounds} rounds; before this section: ${loadBefore}):`,
    );
    log(table(scenarios, results, bareResult));
    scenarios.forEach((scenario, i) => {
      const result = results[i]!;
      if (result.failures > 0) {
        log(`WARNING: ${scenario.label}: ${result.failures} of ${result.requests} responses were errors or not 2xx`);
      }
    });
    log(placement.note);
    if (listTwo && notifyTwo) {
      const ratio = (two: Measurement, one: Measurement) =>
        `${(two.rps / one.rps).toFixed(2)}× req/s, p99 ${(two.p99Ms / one.p99Ms).toFixed(2)}×`;
      log(
        `scaling, 2 instances / 1 (measured): list ${ratio(listTwo, listOne)}; notify ${ratio(notifyTwo, notifyOne)}`,
      );
    }
    const answered =
      notifyOne.requests -
      notifyOne.failures +
      (notifyTwo ? notifyTwo.requests - notifyTwo.failures : 0) +
      loaded.events +
      alone.events +
      introduced;
    const consistent = after.processed === after.inbox && after.payments === after.inbox && after.inbox >= answered;
    for (const trips of [loaded, alone]) {
      const request = trips.roundTrips - trips.workerRoundTrips;
      log(
        `round trips to PostgreSQL per notify event (counted by instance 1 over ${count(trips.events)} events, ` +
          `${trips.connections} connection${trips.connections === 1 ? '' : 's'}): ${trips.roundTrips.toFixed(2)} ` +
          `(request ${request.toFixed(2)} + worker ${trips.workerRoundTrips.toFixed(2)}: fan-out, dispatch, polls), ` +
          `${trips.statements.toFixed(2)} statements` +
          (trips === loaded ? ' (target ≤ 4)' : '') +
          (trips.appCpuMs !== undefined && trips.postgresCpuMs !== undefined
            ? `; CPU per event: instance ${trips.appCpuMs.toFixed(2)} ms + PostgreSQL ${trips.postgresCpuMs.toFixed(2)} ms`
            : ''),
      );
    }
    result = {
      bare: bareResult,
      notifyOneInstance: notifyOne,
      ...(notifyTwo ? { notifyTwoInstances: notifyTwo } : {}),
      notifyOneRps: notifyOne.rps,
      roundTripsPerEvent: loaded.roundTrips,
      statementsPerEvent: loaded.statements,
      ...(loaded.appCpuMs === undefined ? {} : { appCpuMsPerEvent: loaded.appCpuMs }),
      ...(loaded.postgresCpuMs === undefined ? {} : { postgresCpuMsPerEvent: loaded.postgresCpuMs }),
    };
    log(
      `notify on PostgreSQL: ${count(answered)} measured 2xx responses (warm-up and probes not counted); the database ` +
        `holds ${count(after.inbox)} inbox rows (${count(after.processed)} processed) and ${count(after.payments)} payments` +
        ` — ${consistent ? 'every stored event processed once into one payment' : 'MISMATCH'}`,
    );
  } finally {
    await Promise.all(servers.map((server) => server.stop()));
    if (placement.two?.load !== undefined && loadCpusBefore !== undefined) pinLoad(loadCpusBefore);
    try {
      await adminQuery(serverUrl, `drop database if exists ${databaseName} with (force)`);
    } catch (error) {
      log(
        `WARNING: could not drop database ${databaseName}: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
  }
  return result;
}

if (import.meta.main) {
  const number = (name: string, fallback: number) => {
    const value = Number(process.env[name]);
    return process.env[name] && Number.isFinite(value) && value > 0 ? value : fallback;
  };
  try {
    await benchPostgres(
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
  }
}
