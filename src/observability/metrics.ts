// Prometheus metrics (SPEC §8, prom-client): HTTP request counts and latency by route and
// status, plus gauges read from the database at scrape time (queue depths, cases by status),
// so every instance reports the same cluster-wide figures and nothing is kept in memory.
// One registry per Metrics object: tests build many apps in one process.
import { createServer, type Server } from 'node:http';
import type { FastifyInstance } from 'fastify';
import { collectDefaultMetrics, Counter, Gauge, type Histogram, Registry } from 'prom-client';
import type { Kysely } from 'kysely';
import type { DatabaseHandle } from '../db/connect.ts';
import type { Database } from '../db/database.ts';
import type { Clock } from '../shared/clock.ts';

/** What metrics read: the database (for gauges and PostgreSQL traffic) and the clock; the app's Deps satisfy it. */
export interface MetricsDeps {
  db: Kysely<Database>;
  database: Pick<DatabaseHandle, 'traffic'>;
  clock: Clock;
}

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
  collect(deps: MetricsDeps): Promise<GaugeSample[]>;
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

const LATENCY_BOUNDS = LATENCY_BUCKETS.map(String);

/** The event-loop lag histogram's sampling interval (prom-client `eventLoopMonitoringPrecision`), ms. */
const EVENT_LOOP_SAMPLE_MS = 100;

type RequestLabels = Readonly<{ method: string; route: string; status: string }>;

/** The responses of one method, route pattern and status: a count and a latency histogram. */
interface RequestSeries {
  labels: RequestLabels;
  count: number;
  /** Seconds, summed. */
  sum: number;
  /** Responses per latency bucket (not cumulative): [i] ≤ LATENCY_BUCKETS[i], the last one above all. */
  buckets: Float64Array;
}

/** One sample as prom-client's registry renders it. */
interface Sample {
  metricName?: string;
  labels: Record<string, string>;
  value: number;
}

/**
 * A metric the registry renders (what prom-client's own metrics give it): counted by the
 * caller, turned into samples only when scraped.
 */
function scrapedMetric(name: string, help: string, type: 'counter' | 'histogram', samples: () => Sample[]) {
  const read = () => ({ name, help, type, aggregator: 'sum' as const, values: samples() });
  return {
    name,
    help,
    type,
    aggregator: 'sum',
    get: async () => read(),
    getForPromString: async () => read(),
    reset() {},
  };
}

/** The metrics of one service instance. */
export class Metrics {
  readonly registry = new Registry();
  /**
   * Request counts and latencies, by `method route status`: plain numbers added to per
   * response (a Map lookup and a few additions), turned into Prometheus samples at scrape.
   * prom-client's labelled metrics hash the label object on every observation.
   */
  readonly #series = new Map<string, RequestSeries>();

  constructor(deps: MetricsDeps, log: MetricsLogger, options: MetricsOptions = {}) {
    const registers = [this.registry];
    const series = this.#series;
    const requests = scrapedMetric(
      'billing_http_requests_total',
      'HTTP requests answered, by method, route pattern and status code.',
      'counter',
      () => [...series.values()].map(({ labels, count }) => ({ labels, value: count })),
    );
    const latencyName = 'billing_http_request_duration_seconds';
    const latency = scrapedMetric(
      latencyName,
      'Time from receiving a request to sending its response, in seconds.',
      'histogram',
      () =>
        [...series.values()].flatMap(({ labels, count, sum, buckets }) => {
          const samples: Sample[] = [];
          let cumulative = 0;
          LATENCY_BOUNDS.forEach((le, i) => {
            cumulative += buckets[i]!;
            samples.push({ metricName: `${latencyName}_bucket`, labels: { ...labels, le }, value: cumulative });
          });
          samples.push({ metricName: `${latencyName}_bucket`, labels: { ...labels, le: '+Inf' }, value: count });
          samples.push({ metricName: `${latencyName}_sum`, labels, value: sum });
          samples.push({ metricName: `${latencyName}_count`, labels, value: count });
          return samples;
        }),
    );
    // The registry renders any object shaped like its own metrics (name, help, type, get).
    this.registry.registerMetric(requests as unknown as Counter);
    this.registry.registerMetric(latency as unknown as Histogram);
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
    // The event-loop lag histogram samples with a timer: prom-client's default 10 ms wakes an
    // idle process 100 times a second (most of an idle worker's CPU); 100 ms still shows any stall.
    if (options.processMetrics) {
      collectDefaultMetrics({ register: this.registry, eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS });
    }
  }

  /** Counts and times every response of `app` by method, route pattern (not the raw URL) and status. */
  instrument(app: FastifyInstance): void {
    // A callback hook, not an async one: it runs on every response and never waits.
    app.addHook('onResponse', (request, reply, done) => {
      this.record(request.method, request.routeOptions.url ?? 'unmatched', reply.statusCode, reply.elapsedTime / 1000);
      done();
    });
  }

  /**
   * Counts one response of `method` on the route pattern `route` (the pattern keeps the label
   * set small; unknown URLs share `unmatched`) with `status`, answered in `seconds`.
   */
  record(method: string, route: string, status: number, seconds: number): void {
    const key = `${method} ${route} ${status}`;
    let series = this.#series.get(key);
    if (series === undefined) {
      const labels = Object.freeze({ method, route, status: String(status) });
      series = { labels, count: 0, sum: 0, buckets: new Float64Array(LATENCY_BUCKETS.length + 1) };
      this.#series.set(key, series);
    }
    series.count += 1;
    series.sum += seconds;
    let bucket = 0;
    while (bucket < LATENCY_BUCKETS.length && seconds > LATENCY_BUCKETS[bucket]!) bucket += 1;
    series.buckets[bucket]! += 1;
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
