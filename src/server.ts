// Runs the service: config → deps → buildApp → listen, with graceful shutdown on SIGTERM/SIGINT
// (SPEC §7): stop accepting, let in-flight requests and the worker's in-flight work finish
// (at most SHUTDOWN_TIMEOUT_MS), close the database, exit 0. Metrics on METRICS_PORT (§8).
import type { FastifyInstance } from 'fastify';
import { resolve } from 'node:path';
import pino from 'pino';
import type { Config } from './config.ts';
import { createDeps, type Deps } from './deps.ts';
import { sendError, ServiceUnavailableError } from './http/errors.ts';
import { loggerOptions } from './http/logger.ts';
import { anyUsableApiKey } from './modules/api-keys/api-keys.service.ts';
import { checkStoredSecrets, type SecretsLog } from './modules/payment-methods/payment-methods.keys.ts';
import { checkDefaultTaxRates } from './modules/tax-rates/tax-rates.service.ts';
import { DATABASE_GAUGES } from './gauges.ts';
import { Metrics, type MetricsServer, startMetricsServer } from './observability/metrics.ts';
import { JOBS, SERVICES } from './worker/jobs.ts';
import { Worker } from './worker/runner.ts';

/** Longest a graceful shutdown waits for in-flight requests and work before forcing. */
export const SHUTDOWN_TIMEOUT_MS = 10_000;
/** Time left, within the shutdown bound, for aborted deliveries to give their leases back. */
const WORKER_ABORT_MARGIN_MS = 1_000;
/** Longest closing the database may take once draining is over. */
const CLOSE_TIMEOUT_MS = 2_000;

export interface ServeOptions {
  /** Start the background worker in this process (SPEC §1: `npm start` does). */
  worker: boolean;
}

/** What a running process owns, in the order drain() stops it. */
export interface RunningParts {
  app?: FastifyInstance;
  worker?: Worker;
  metricsServer?: MetricsServer;
  deps: Deps;
}

interface ShutdownLogger {
  info(object: object, message: string): void;
  warn(object: object, message: string): void;
}

/** Resolves `'timed_out'` after `ms`, unless `promise` settles first (its value, or its error). */
async function within<T>(promise: Promise<T>, ms: number): Promise<T | 'timed_out'> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'timed_out'>((resolve) => {
    timer = setTimeout(() => resolve('timed_out'), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Stops a process gracefully: the API stops accepting connections (new requests on open
 * keep-alive connections get 503) while in-flight requests finish; the worker claims
 * nothing new and finishes its batch; the metrics server closes. All at once, for at most
 * `timeoutMs`; past that, open connections are cut. Then the database is closed (pending
 * writes flushed). Returns `'drained'` or `'timed_out'`; work cut short is safe to retry:
 * its transactions roll back and its leases expire (SPEC §7).
 */
export async function drain(
  parts: RunningParts,
  timeoutMs: number,
  log: ShutdownLogger,
): Promise<'drained' | 'timed_out'> {
  // The worker's in-flight deliveries get most of the budget, then are aborted with their
  // leases given back (another worker sends them), so stop() itself ends within the bound.
  const graceMs = Math.max(0, timeoutMs - WORKER_ABORT_MARGIN_MS);
  const stopping = Promise.all([parts.app?.close(), parts.worker?.stop({ graceMs }), parts.metricsServer?.close()]);
  let outcome: 'drained' | 'timed_out' = 'drained';
  try {
    if ((await within(stopping, timeoutMs)) === 'timed_out') {
      outcome = 'timed_out';
      log.warn({ timeoutMs }, 'shutdown: in-flight work did not finish in time; cutting connections');
      parts.app?.server.closeAllConnections();
    }
  } finally {
    if ((await within(parts.deps.close(), CLOSE_TIMEOUT_MS)) === 'timed_out') outcome = 'timed_out';
  }
  log.info({ outcome }, 'shutdown complete');
  return outcome;
}

/**
 * Once the app starts closing: logs it; a request that still arrives on an open keep-alive
 * connection is answered 503 in the error envelope (the client or load balancer retries it
 * elsewhere); every response still to come carries `Connection: close`, so a connection
 * whose request was in flight closes after it instead of holding the shutdown open until
 * its idle timeout.
 */
function closeConnectionsWhenDraining(app: FastifyInstance): void {
  let draining = false;
  app.addHook('preClose', async () => {
    draining = true;
    app.log.info('draining: no new requests are served');
  });
  // Callback hooks, not async ones: they run on every request and never wait.
  app.addHook('onRequest', (_request, reply, done) => {
    if (!draining) return done();
    sendError(reply, new ServiceUnavailableError('the service is shutting down; retry the request'));
  });
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (draining) reply.header('connection', 'close');
    done(null, payload);
  });
}

/** Calls `stop` once on the first SIGTERM or SIGINT; a second signal kills at once (default action). */
function onTermination(stop: (signal: string) => Promise<void>): void {
  process.once('SIGTERM', () => void stop('SIGTERM'));
  process.once('SIGINT', () => void stop('SIGINT'));
}

/** The metrics server on METRICS_PORT, when set. */
async function serveMetrics(config: Readonly<Config>, metrics: Metrics): Promise<MetricsServer | undefined> {
  if (config.metricsPort === undefined) return undefined;
  return startMetricsServer(metrics, { host: config.host, port: config.metricsPort });
}

/**
 * The start-up check of stored secrets against DATA_ENCRYPTION_KEYS (checkStoredSecrets: one
 * warn line with counts when some open with no key). Runs in the background: it reads the
 * whole saved-methods table, and the start must not wait for it; a failure is logged.
 */
function checkStoredSecretsInBackground(
  deps: Deps,
  log: SecretsLog & { error(object: object, message: string): void },
) {
  checkStoredSecrets(deps.db, deps.config.dataEncryptionKeys, log).catch((error: unknown) => {
    log.error({ err: error }, 'the start-up check of stored secrets failed');
  });
}

/** Where the data is, without a password: a SQLite file's absolute path, or PostgreSQL's host and database. */
function describeDatabase(config: Readonly<Config>): string {
  if (config.database.kind === 'sqlite') {
    return config.database.path === ':memory:' ? 'SQLite in memory' : `SQLite ${resolve(config.database.path)}`;
  }
  const url = new URL(config.database.url);
  return `PostgreSQL ${url.hostname}:${url.port || 5432}${url.pathname}`;
}

/**
 * The first lines a newcomer reads: the URL, the API reference, the console and how to sign
 * in to it, where the data is, and —
 * when no key could authenticate yet — how to make one.
 */
async function sayWhereAndWhatNext(deps: Deps, app: FastifyInstance): Promise<void> {
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : deps.config.port;
  const host = deps.config.host.includes(':') ? `[${deps.config.host}]` : deps.config.host;
  const url = `http://${host}:${port}`;
  app.log.info(
    {
      url,
      docs: `${url}/docs`,
      console: `${url}/console (sign in: npx billing console-login)`,
      database: describeDatabase(deps.config),
    },
    `ready: ${url}/docs`,
  );
  if (!(await anyUsableApiKey(deps.db, deps.clock, deps.config.apiKeys))) {
    app.log.warn('no API key exists yet: create one with `npx billing keys create --name admin` (printed once)');
  }
}

/**
 * The deps of a process that serves or works, once the configuration is checked against the
 * database: DEFAULT_TAX_RATE_IDS must name existing tax rates (a ConfigError, the database
 * closed, otherwise: a mistyped id would leave every invoice untaxed without a word).
 */
async function startingDeps(config: Readonly<Config>): Promise<Deps> {
  const deps = await createDeps(config);
  try {
    await checkDefaultTaxRates(deps.db, config.defaultTaxRateIds);
  } catch (error) {
    await deps.close();
    throw error;
  }
  return deps;
}

/** Starts the HTTP API on HOST:PORT after migrating. Resolves once listening. */
export async function serve(config: Readonly<Config>, options: ServeOptions): Promise<void> {
  const deps = await startingDeps(config);
  const log = pino(loggerOptions(config.logLevel));
  const metrics = new Metrics(deps, log, { gauges: DATABASE_GAUGES, processMetrics: true });
  // Loaded here, not at the top: `billing worker` serves no HTTP and skips loading the app
  // (the routes, the OpenAPI document, the /docs bundle): ≈ 0.3 s of CPU at its start.
  const { buildApp } = await import('./app.ts');
  const app = await buildApp(deps, { metrics });
  closeConnectionsWhenDraining(app);
  const worker = options.worker ? new Worker(deps, JOBS, app.log, SERVICES) : undefined;
  const parts: RunningParts = { app, worker, deps };

  let stopping = false;
  onTermination(async (signal) => {
    if (stopping) return;
    stopping = true;
    app.log.info({ signal }, 'shutting down');
    try {
      const outcome = await drain(parts, SHUTDOWN_TIMEOUT_MS, app.log);
      process.exit(outcome === 'drained' ? 0 : 1);
    } catch (error) {
      app.log.error({ err: error }, 'shutdown failed');
      process.exit(1);
    }
  });

  try {
    await app.listen({ port: config.port, host: config.host });
    parts.metricsServer = await serveMetrics(config, metrics);
  } catch (error) {
    // E.g. METRICS_PORT already taken: stop what did start, so the process can exit.
    await app.close();
    await deps.close();
    throw error;
  }
  if (parts.metricsServer) app.log.info({ url: `${parts.metricsServer.url}/metrics` }, 'metrics listening');
  await sayWhereAndWhatNext(deps, app);
  checkStoredSecretsInBackground(deps, app.log);
  worker?.start();
  tellParentReady();
}

/**
 * Sends `'ready'` to the parent process when it started this one with an IPC channel (Node's
 * child_process with `'ipc'`, PM2's `wait_ready`): it learns the API answers without polling.
 * The channel then no longer keeps the process alive.
 */
function tellParentReady(): void {
  if (!process.send) return;
  process.send('ready');
  process.channel?.unref();
}

/** Runs the background worker alone (`billing worker`) until SIGTERM/SIGINT. */
export async function runWorker(config: Readonly<Config>): Promise<void> {
  const deps = await startingDeps(config);
  const log = pino(loggerOptions(config.logLevel));
  const worker = new Worker(deps, JOBS, log, SERVICES);
  const metrics = new Metrics(deps, log, { gauges: DATABASE_GAUGES, processMetrics: true });
  const metricsServer = await serveMetrics(config, metrics);
  onTermination(async (signal) => {
    log.info({ signal }, 'worker shutting down');
    try {
      const outcome = await drain({ worker, metricsServer, deps }, SHUTDOWN_TIMEOUT_MS, log);
      process.exit(outcome === 'drained' ? 0 : 1);
    } catch (error) {
      log.error({ err: error }, 'shutdown failed');
      process.exit(1);
    }
  });
  log.info({ jobs: JOBS.map((job) => job.name) }, 'worker started');
  checkStoredSecretsInBackground(deps, log);
  worker.start();
}
