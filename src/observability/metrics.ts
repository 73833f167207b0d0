// Prometheus metrics (SPEC §8, prom-client): HTTP request counts and latency by route and
// status, plus gauges read from the database at scrape time (queue depths, cases by status),
// so every instance reports the same cluster-wide figures and nothing is kept in memory.
// One registry per Metrics object: tests build many apps in one process.
import { createServer, type Server } from 'node:http';
import type { FastifyInstance } from 'fastify';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Deps } from '../deps.ts';

/** One value of a gauge, with its labels. */
export interface GaugeSample {
  labels?: Record<string, string>;
  value: number;
}

/**
 * A gauge whose values are read from the database when Prometheus scrapes. `collect` gets
 * the deps and returns the current samples; it should be one cheap, indexed query.
 */
export interface DatabaseGauge {
  /** Prometheus name, `billing_…` (e.g. `billing_webhook_deliveries_due`). */
  name: string;
  help: string;
  labelNames?: readonly string[];
  collect(deps: Deps): Promise<GaugeSample[]>;
}

export interface MetricsOptions {
  /** Gauges read at scrape time (default none). */
  gauges?: readonly DatabaseGauge[];
  /** Also export Node's process metrics (CPU, memory, event loop); off in tests. */
  processMetrics?: boolean;
}

interface MetricsLogger {
  warn(object: object, message: string): void;
}

/** Latency buckets in seconds: 5 ms … 10 s. */
const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** The metrics of one service instance. */
export class Metrics {
  readonly registry = new Registry();
  readonly #requests: Counter<'method' | 'route' | 'status'>;
  readonly #latency: Histogram<'method' | 'route' | 'status'>;

  constructor(deps: Deps, log: MetricsLogger, options: MetricsOptions = {}) {
    const registers = [this.registry];
    this.#requests = new Counter({
      name: 'billing_http_requests_total',
      help: 'HTTP requests answered, by method, route pattern and status code.',
      labelNames: ['method', 'route', 'status'],
      registers,
    });
    this.#latency = new Histogram({
      name: 'billing_http_request_duration_seconds',
      help: 'Time from receiving a request to sending its response, in seconds.',
      labelNames: ['method', 'route', 'status'],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    // What this instance sent to PostgreSQL (db/pg-traffic.ts); stays 0 on SQLite.
    const traffic = deps.database.traffic;
    new Counter({
      name: 'billing_db_round_trips_total',
      help: 'Messages this instance sent to PostgreSQL and waited for (network round trips).',
      registers,
      collect() {
        this.reset();
        this.inc(traffic.roundTrips);
      },
    });
    new Counter({
      name: 'billing_db_statements_total',
      help: 'SQL statements this instance sent to PostgreSQL, BEGIN/COMMIT included (several may share a round trip).',
      registers,
      collect() {
        this.reset();
        this.inc(traffic.statements);
      },
    });
    new Counter({
      name: 'billing_db_worker_round_trips_total',
      help: 'The part of billing_db_round_trips_total sent by the background worker (jobs, webhook dispatcher).',
      registers,
      collect() {
        this.reset();
        this.inc(traffic.worker.roundTrips);
      },
    });
    new Counter({
      name: 'billing_db_worker_statements_total',
      help: 'The part of billing_db_statements_total sent by the background worker (jobs, webhook dispatcher).',
      registers,
      collect() {
        this.reset();
        this.inc(traffic.worker.statements);
      },
    });
    for (const gauge of options.gauges ?? []) {
      new Gauge({
        name: gauge.name,
        help: gauge.help,
        labelNames: [...(gauge.labelNames ?? [])],
        registers,
        async collect() {
          this.reset();
          try {
            for (const sample of await gauge.collect(deps)) {
              if (sample.labels) this.set(sample.labels, sample.value);
              else this.set(sample.value);
            }
          } catch (error) {
            // One failing query does not fail the scrape: its gauge is left empty (NaN when it
            // has no labels, since an unlabelled gauge always shows a value) and logged.
            this.reset();
            if ((gauge.labelNames ?? []).length === 0) this.set(Number.NaN);
            log.warn({ err: error, gauge: gauge.name }, 'metrics: gauge could not be read');
          }
        },
      });
    }
    if (options.processMetrics) collectDefaultMetrics({ register: this.registry });
  }

  /** Counts and times every response of `app` by method, route pattern (not the raw URL) and status. */
  instrument(app: FastifyInstance): void {
    // A callback hook, not an async one: it runs on every response and never waits.
    app.addHook('onResponse', (request, reply, done) => {
      const labels = {
        method: request.method,
        // The pattern keeps the label set small; unknown URLs share one label.
        route: request.routeOptions.url ?? 'unmatched',
        status: String(reply.statusCode),
      };
      this.#requests.inc(labels);
      this.#latency.observe(labels, reply.elapsedTime / 1000);
      done();
    });
  }

  /** The Prometheus text exposition of every metric. */
  async render(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}

export interface MetricsServer {
  /** `http://host:port` */
  url: string;
  close(): Promise<void>;
}

/**
 * Serves `GET /metrics` on its own port (METRICS_PORT), apart from the API: no API key, no
 * rate limit, and it can stay unexposed to the internet. Other paths answer 404.
 */
export async function startMetricsServer(
  metrics: Metrics,
  listen: { host: string; port: number },
): Promise<MetricsServer> {
  const server: Server = createServer((request, response) => {
    const path = (request.url ?? '').split('?')[0];
    if (request.method !== 'GET' || path !== '/metrics') {
      response.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('not found\n');
      return;
    }
    metrics.render().then(
      ({ contentType, body }) => response.writeHead(200, { 'content-type': contentType }).end(body),
      () => response.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end('metrics failed\n'),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(listen.port, listen.host, () => resolve());
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : listen.port;
  return {
    url: `http://${listen.host.includes(':') ? `[${listen.host}]` : listen.host}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

declare module 'fastify' {
  interface FastifyInstance {
    /** The app's metrics (served on METRICS_PORT by server.ts). */
    metrics: Metrics;
  }
}
