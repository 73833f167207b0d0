// Bench scenario for the operator console (SPEC §16, docs/performance.md): its list pages with
// 1,000,000 customers, on SQLite and PostgreSQL. Seeds the customers in bulk (PostgreSQL: one
// INSERT … SELECT over generate_series; SQLite: one prepared statement in one transaction,
// the customer indexes rebuilt once after), then clones one real subscription and its
// invoice (made by the services) into BENCH_CONSOLE_SUBSCRIPTIONS subscriptions and invoices,
// and BENCH_CONSOLE_EVENTS events about the first customers. Then, signed in through a
// one-time link (read-only), sequential GETs of each page against the API in a child process
// (no worker): p50 and p95 server time (the console's Server-Timing header), p95 wall time,
// server CPU per request, each beside a floor measured in
// the same run (the console's stylesheet: the same server and plugin, no database, no
// template). Target p95 ≤ 100 ms per page. PostgreSQL runs on a fresh database at
// BENCH_PG_URL and is skipped, with a note, when it does not answer. Measures; never fails on
// speed. Alone: `node bench/console.ts` (BENCH_SMOKE=1 for the tiny sizes).
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { sql } from 'kysely';
import { createSubscription } from '../src/billing/subscriptions.ts';
import { loadConfig } from '../src/config.ts';
import { createDeps, type Deps } from '../src/deps.ts';
import { createLoginLink } from '../src/modules/console-sessions/console-sessions.service.ts';
import { createCustomer } from '../src/modules/customers/customers.service.ts';
import { normalizeName } from '../src/modules/customers/customers.name.ts';
import { createPlan } from '../src/modules/plans/plans.service.ts';
import { isPostgres } from '../src/db/column-types.ts';
import { adminQuery } from './postgres.ts';
import { type RunningServer, startServer, wholeNumberSetting } from './servers.ts';

const ROOT = resolve(import.meta.dirname, '..');
const API_KEY = 'bench_bootstrap_key_0123456789';
const DEFAULT_SERVER_URL = 'postgres://postgres@127.0.0.1:5432/postgres';
/** Target (docs/performance.md): p95 server time of each console page. */
export const TARGET_P95_MS = 100;
/** Events seeded per customer that has events (the first customers). */
const EVENTS_PER_CUSTOMER = 10;

// ASCII names, so SQL lower() and normalizeName agree in the PostgreSQL INSERT … SELECT.
const FIRST = ['Ada', 'Grace', 'Alan', 'Chidi', 'Amaka', 'Tunde', 'Ngozi', 'Kemi', 'Femi', 'Zainab', 'Ife', 'Bola'];
const LAST = ['Okafor', 'Adeyemi', 'Lovelace', 'Hopper', 'Turing', 'Balogun', 'Eze', 'Obi', 'Diallo', 'Mensah'];

export interface ConsoleBenchSettings {
  customers: number;
  /** Subscriptions, and as many invoices (one each). */
  subscriptions: number;
  events: number;
  /** Measured requests per page (after 10 unmeasured). */
  requests: number;
}

export interface ConsolePageFigure {
  page: string;
  /** Server time (the console's Server-Timing header). */
  p50Ms: number;
  p95Ms: number;
  /** Wall time at the client. */
  wallP95Ms: number;
  cpuMsPerRequest: number | undefined;
}

export interface ConsoleFigures {
  database: 'sqlite' | 'postgres';
  seedSeconds: number;
  floor: ConsolePageFigure;
  pages: ConsolePageFigure[];
}

const count = (n: number) => n.toLocaleString('en-US');

/** `i` (1-based) as the 26 characters of an id: zero-padded decimal (valid Crockford base32). */
function padded(i: number): string {
  return String(i).padStart(26, '0');
}

/** The customer `i` (1-based): its id, email and name, the same on both databases. */
function customerOf(i: number) {
  const first = FIRST[i % FIRST.length]!;
  const last = LAST[Math.floor(i / FIRST.length) % LAST.length]!;
  const email = `${first}.${last}.${i}@example.com`.toLowerCase();
  return { id: `cus_${padded(i)}`, email, name: `${first} ${last}` };
}

/** SQL text of `i` zero-padded to 26 characters, per dialect. */
function padSql(postgres: boolean, column: string): string {
  return postgres ? `lpad(${column}::text, 26, '0')` : `substr('00000000000000000000000000' || ${column}, -26, 26)`;
}

/** SQL text of "now minus `column` seconds" as the dialect stores timestamps. */
function agoSql(postgres: boolean, column: string): string {
  return postgres
    ? `now() - make_interval(secs => ${column})`
    : `strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-' || ${column} || ' seconds')`;
}

/** The customers on SQLite: one prepared statement in one transaction, indexes rebuilt after. */
function seedCustomersSqlite(path: string, n: number): void {
  const db = new DatabaseSync(path);
  try {
    db.exec('PRAGMA synchronous = OFF');
    db.exec('PRAGMA cache_size = -262144');
    db.exec('PRAGMA threads = 2');
    db.exec('BEGIN');
    const indexes = db
      .prepare(
        "select name, sql from sqlite_master where type = 'index' and tbl_name = 'customers' and sql is not null",
      )
      .all() as { name: string; sql: string }[];
    for (const index of indexes) db.exec(`drop index "${index.name}"`);
    const insert = db.prepare(
      `insert into customers (id, email, email_normalized, name, name_normalized, metadata, created_at, updated_at,
         tax_rate_ids, tax_exempt, tax_ids) values (?, ?, ?, ?, ?, '{}', ?, ?, '[]', 'none', '[]')`,
    );
    const now = Date.now();
    for (let i = 1; i <= n; i++) {
      const { id, email, name } = customerOf(i);
      const at = new Date(now - i * 1000).toISOString();
      insert.run(id, email, email, name, normalizeName(name), at, at);
    }
    for (const index of indexes) db.exec(index.sql);
    db.exec('COMMIT');
    db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
  } finally {
    db.close();
  }
}

/** The customers on PostgreSQL: one INSERT … SELECT over generate_series (the same rows as customerOf). */
async function seedCustomersPostgres(deps: Deps, n: number): Promise<void> {
  const first = `(array[${FIRST.map((f) => `'${f}'`).join(',')}])[1 + i % ${FIRST.length}]`;
  const last = `(array[${LAST.map((l) => `'${l}'`).join(',')}])[1 + (i / ${FIRST.length}) % ${LAST.length}]`;
  const email = `lower(${first} || '.' || ${last} || '.' || i || '@example.com')`;
  await sql
    .raw(
      `insert into customers (id, email, email_normalized, name, name_normalized, metadata, created_at, updated_at,
         tax_rate_ids, tax_exempt, tax_ids)
       select 'cus_' || ${padSql(true, 'i')}, ${email}, ${email}, ${first} || ' ' || ${last},
         lower(${first} || ' ' || ${last}), '{}', ${agoSql(true, 'i')}, ${agoSql(true, 'i')}, '[]', 'none', '[]'
       from generate_series(1, ${Math.trunc(n)}) as g(i)`,
    )
    .execute(deps.db);
}

/** The column names of `table`. */
async function columnsOf(deps: Deps, table: string): Promise<string[]> {
  if (isPostgres(deps.db)) {
    const rows = await sql<{ column_name: string }>`select column_name from information_schema.columns
      where table_name = ${table} and table_schema = current_schema() order by ordinal_position`.execute(deps.db);
    return rows.rows.map((row) => row.column_name);
  }
  const rows = await sql<{ name: string }>`select name from pragma_table_info(${table})`.execute(deps.db);
  return rows.rows.map((row) => row.name);
}

/**
 * Inserts `n` copies of row `templateId` of `table` in one statement, column `c` of copy `i`
 * (1-based) being `overrides[c]` (SQL text over `i`) or the template's value.
 */
async function cloneRows(
  deps: Deps,
  table: string,
  templateId: string,
  n: number,
  overrides: Record<string, string>,
): Promise<void> {
  const columns = await columnsOf(deps, table);
  const select = columns.map((column) => overrides[column] ?? `t.${column}`).join(', ');
  const list = columns.join(', ');
  const text = isPostgres(deps.db)
    ? `insert into ${table} (${list}) select ${select} from ${table} t, generate_series(1, ${Math.trunc(n)}) as g(i) where t.id = `
    : `with recursive g(i) as (select 1 union all select i + 1 from g where i < ${Math.trunc(n)})
       insert into ${table} (${list}) select ${select} from ${table} t, g where t.id = `;
  await sql`${sql.raw(text)}${templateId}`.execute(deps.db);
}

/** Seeds the world on `deps`' database (empty but migrated): customers, subscriptions, invoices, events. */
async function seed(deps: Deps, databaseUrl: string, settings: ConsoleBenchSettings): Promise<void> {
  const postgres = isPostgres(deps.db);
  if (postgres) await seedCustomersPostgres(deps, settings.customers);
  else seedCustomersSqlite(databaseUrl.slice('sqlite:'.length), settings.customers);
  // One real subscription and its first invoice, then copies of them spread over the customers.
  const template = await createCustomer(deps.db, deps.clock, { email: 'template@example.com', name: 'Template' });
  const plan = await createPlan(deps.db, deps.clock, { name: 'Pro', amount: 5000, currency: 'NGN', interval: 'month' });
  const subscription = await createSubscription(deps.db, deps, { customer_id: template.id, plan_id: plan.id });
  const invoice = await deps.db
    .selectFrom('invoices')
    .select('id')
    .where('subscription_id', '=', subscription.id)
    .executeTakeFirstOrThrow();
  const step = Math.max(1, Math.floor(settings.customers / settings.subscriptions));
  const customerOfCopy = `'cus_' || ${padSql(postgres, `(1 + (i - 1) * ${step})`)}`;
  await cloneRows(deps, 'subscriptions', subscription.id, settings.subscriptions, {
    id: `'sub_' || ${padSql(postgres, 'i')}`,
    customer_id: customerOfCopy,
    created_at: agoSql(postgres, `(i * ${step})`),
    updated_at: agoSql(postgres, `(i * ${step})`),
  });
  await cloneRows(deps, 'invoices', invoice.id, settings.subscriptions, {
    id: `'inv_' || ${padSql(postgres, 'i')}`,
    subscription_id: `'sub_' || ${padSql(postgres, 'i')}`,
    customer_id: customerOfCopy,
    number: `'BENCH-' || i`,
    hosted_token: `'bench-token-' || i`,
    created_at: agoSql(postgres, `(i * ${step})`),
    updated_at: agoSql(postgres, `(i * ${step})`),
  });
  const customerOfEvent = `'cus_' || ${padSql(postgres, `(1 + (i - 1) / ${EVENTS_PER_CUSTOMER})`)}`;
  await sql
    .raw(
      postgres
        ? `insert into events (id, topic, data, created_at, emitted_at, delivered_at, fanned_out_at, customer_id)
           select 'evt_' || ${padSql(true, 'i')}, 'customer.updated', '{"id":"' || ${customerOfEvent} || '"}',
             ${agoSql(true, 'i')}, ${agoSql(true, 'i')}, now(), now(), ${customerOfEvent}
           from generate_series(1, ${Math.trunc(settings.events)}) as g(i)`
        : `with recursive g(i) as (select 1 union all select i + 1 from g where i < ${Math.trunc(settings.events)})
           insert into events (id, topic, data, created_at, emitted_at, delivered_at, fanned_out_at, customer_id)
           select 'evt_' || ${padSql(false, 'i')}, 'customer.updated', '{"id":"' || ${customerOfEvent} || '"}',
             ${agoSql(false, 'i')}, ${agoSql(false, 'i')}, ${agoSql(false, '0')}, ${agoSql(false, '0')}, ${customerOfEvent}
           from g`,
    )
    .execute(deps.db);
  for (const [name, value] of [
    ['customers', settings.customers + 1],
    ['subscriptions', settings.subscriptions + 1],
  ] as const) {
    await sql`insert into row_counts (name, count) values (${name}, ${value})
      on conflict (name) do update set count = excluded.count`.execute(deps.db);
  }
  if (postgres) await sql`analyze`.execute(deps.db);
}

interface Run {
  /** Sorted server times (ms): the console's `Server-Timing: app;dur=…`, request to response. */
  server: number[];
  /** Sorted wall times (ms) seen by the client: the server time plus HTTP and scheduling. */
  wall: number[];
  cpuMs: number | undefined;
}

/** Sequential GETs of `urlOf(i)`: server and wall times, server CPU (ms per request). */
async function measure(
  app: RunningServer,
  cookie: string,
  requests: number,
  urlOf: (i: number) => string,
  expect: string,
): Promise<Run> {
  const once = async (i: number) => {
    const url = `${app.url}${urlOf(i)}`;
    const started = performance.now();
    const response = await fetch(url, { headers: { cookie } });
    const body = await response.text();
    const wall = performance.now() - started;
    if (response.status !== 200 || !body.includes(expect)) {
      throw new Error(
        `console bench: GET ${url} answered ${response.status} without "${expect}": ${body.slice(0, 300)}`,
      );
    }
    const server = /app;dur=([\d.]+)/.exec(response.headers.get('server-timing') ?? '')?.[1];
    if (server === undefined) throw new Error(`console bench: GET ${url} has no Server-Timing`);
    return { wall, server: Number(server) };
  };
  for (let i = 0; i < 10; i++) await once(i);
  const cpuBefore = app.cpuSeconds();
  const server: number[] = [];
  const wall: number[] = [];
  for (let i = 0; i < requests; i++) {
    const times = await once(i + 10);
    server.push(times.server);
    wall.push(times.wall);
  }
  const cpuAfter = app.cpuSeconds();
  return {
    server: server.sort((x, y) => x - y),
    wall: wall.sort((x, y) => x - y),
    cpuMs: cpuBefore === undefined || cpuAfter === undefined ? undefined : ((cpuAfter - cpuBefore) * 1000) / requests,
  };
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;

async function runOn(
  database: 'sqlite' | 'postgres',
  databaseUrl: string,
  settings: ConsoleBenchSettings,
  log: (line: string) => void,
): Promise<ConsoleFigures> {
  const config = loadConfig({ DATABASE_URL: databaseUrl, API_KEYS: API_KEY, LOG_LEVEL: 'silent' });
  const deps = await createDeps(config);
  let app: RunningServer | undefined;
  try {
    const seedStarted = performance.now();
    await seed(deps, databaseUrl, settings);
    const seedSeconds = (performance.now() - seedStarted) / 1000;
    log(
      `  ${database}: seeded ${count(settings.customers)} customers, ${count(settings.subscriptions)} subscriptions and invoices, ${count(settings.events)} events in ${seedSeconds.toFixed(1)} s`,
    );
    app = await startServer(
      join(ROOT, 'bench/api-only-server.ts'),
      { DATABASE_URL: databaseUrl, API_KEYS: API_KEY, LOG_LEVEL: 'warn', RATE_LIMIT_MAX: '0' },
      '/api/health',
    );
    const link = await createLoginLink(deps.db, deps.clock, { readOnly: true });
    const login = await fetch(`${app.url}/console/login/${link.token}`);
    await login.text();
    const cookie = (login.headers.get('set-cookie') ?? '').split(';')[0]!;
    if (login.status !== 200 || cookie === '') throw new Error(`console bench: sign-in answered ${login.status}`);

    const n = settings.customers;
    const spread = (i: number) => 1 + ((i * 7919) % n);
    const withEvents = Math.max(1, Math.floor(settings.events / EVENTS_PER_CUSTOMER));
    const pages: [string, (i: number) => string, string][] = [
      ['customers (newest first)', () => '/console/customers', 'Next page'],
      [
        'search by email prefix',
        (i) => `/console/customers?by=email&q=${encodeURIComponent(customerOf(spread(i)).email.slice(0, -14))}`,
        '@example.com',
      ],
      [
        'search by name prefix (any case)',
        (i) =>
          `/console/customers?by=name&q=${encodeURIComponent(customerOf(spread(i)).name.toUpperCase().slice(0, -2))}`,
        '@example.com',
      ],
      ['invoices', () => '/console/invoices', 'Next page'],
      ['invoices, status open', () => '/console/invoices?status=open', 'Next page'],
      ['subscriptions', () => '/console/subscriptions', 'Next page'],
      ['customer detail', (i) => `/console/customers/${customerOf(1 + (i % withEvents)).id}`, 'customer.updated'],
    ];
    const floorRun = await measure(app, cookie, settings.requests, () => '/console/static/console.css', 'body');
    const figureOf = (page: string, run: Run): ConsolePageFigure => ({
      page,
      p50Ms: percentile(run.server, 0.5),
      p95Ms: percentile(run.server, 0.95),
      wallP95Ms: percentile(run.wall, 0.95),
      cpuMsPerRequest: run.cpuMs,
    });
    const floor = figureOf('floor: GET /console/static/console.css', floorRun);
    const figures: ConsolePageFigure[] = [];
    for (const [page, urlOf, expect] of pages) {
      figures.push(figureOf(page, await measure(app, cookie, settings.requests, urlOf, expect)));
    }
    const cpu = (figure: ConsolePageFigure) =>
      figure.cpuMsPerRequest === undefined ? '—' : figure.cpuMsPerRequest.toFixed(2);
    log(
      `  ${database}: page | server p50 ms | server p95 ms | wall p95 ms | wall p95 vs floor | server CPU ms/req | server p95 ≤ ${TARGET_P95_MS} ms`,
    );
    const line = (figure: ConsolePageFigure, verdict: string) =>
      `    ${figure.page} | ${figure.p50Ms.toFixed(2)} | ${figure.p95Ms.toFixed(2)} | ${figure.wallP95Ms.toFixed(2)} | ${(figure.wallP95Ms / floor.wallP95Ms).toFixed(1)}× | ${cpu(figure)} | ${verdict}`;
    log(line(floor, '—'));
    for (const figure of figures) log(line(figure, figure.p95Ms <= TARGET_P95_MS ? 'yes' : 'NO'));
    return { database, seedSeconds, floor, pages: figures };
  } finally {
    await app?.stop();
    await deps.close();
  }
}

/** Runs the console pages on SQLite (a file in `workDir`) and, when it answers, PostgreSQL. */
export async function benchConsole(
  workDir: string,
  settings: ConsoleBenchSettings,
  log: (line: string) => void,
): Promise<ConsoleFigures[]> {
  log(
    `\nconsole (SPEC §16: list pages at ${count(settings.customers)} customers, sequential, signed in; load average ${loadavg()[0]!.toFixed(2)} on ${cpus().length} CPUs):`,
  );
  const figures = [await runOn('sqlite', `sqlite:${join(workDir, 'console.db')}`, settings, log)];
  const serverUrl = process.env.BENCH_PG_URL ?? DEFAULT_SERVER_URL;
  const name = `billing_console_bench_${process.pid}`;
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
  log(
    `  load average after: ${loadavg()
      .map((value) => value.toFixed(2))
      .join(', ')}`,
  );
  return figures;
}

/** The settings from the environment; `smoke` gives the tiny sizes CI runs. */
export function consoleBenchSettings(smoke: boolean): ConsoleBenchSettings {
  const number = wholeNumberSetting;
  return {
    customers: number('BENCH_CONSOLE_CUSTOMERS', smoke ? 200 : 1_000_000),
    subscriptions: number('BENCH_CONSOLE_SUBSCRIPTIONS', smoke ? 60 : 100_000),
    events: number('BENCH_CONSOLE_EVENTS', smoke ? 100 : 100_000),
    requests: number('BENCH_CONSOLE_REQUESTS', smoke ? 5 : 200),
  };
}

if (import.meta.main) {
  const dir = mkdtempSync(join(tmpdir(), 'bench-console-'));
  try {
    await benchConsole(dir, consoleBenchSettings(process.env.BENCH_SMOKE === '1'), (line) =>
      process.stdout.write(`${line}\n`),
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
