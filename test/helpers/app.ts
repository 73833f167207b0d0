// buildTestApp(t): the real app on a real port over a fresh database (a copy of one
// migrated once per process), closed when the test ends. Requests go over HTTP with
// fetch, as a client's would.
import type { TestContext } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.ts';
import { loadConfig } from '../../src/config.ts';
import { createDeps, type Deps } from '../../src/deps.ts';
import type { CallDeadlines } from '../../src/providers/provider-api.ts';
import { ManualClock } from '../../src/shared/clock.ts';
import { afterTest } from './after.ts';
import { createMigratedTestDatabase, createTestDatabase, type MigratedTestDatabase, ON_POSTGRES } from './database.ts';
import { SHARED_SCHEMA_COMPILERS } from './schema-compilers.ts';

/** The bootstrap admin key every test app accepts. */

/** A test DATA_ENCRYPTION_KEY (32 bytes, base64): required whenever a provider API key is set. */
export const DATA_ENCRYPTION_KEY = 'k6tQ5fO1JrZ8mH3sV2yW9xA4bC7dE0gI1jL2nP3qR4s=';

export const ADMIN_KEY = 'test_admin_key_0123456789abcdef';

export interface TestResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export interface RequestOptions {
  body?: unknown;
  /** Raw body text; sent as-is. */
  rawBody?: string | Buffer;
  /** API key to send (default ADMIN_KEY); null sends none. */
  key?: string | null;
  headers?: Record<string, string>;
}

export interface TestApp {
  app: FastifyInstance;
  deps: Deps;
  clock: ManualClock;
  baseUrl: string;
  /** Sends one request; JSON bodies get Content-Type: application/json. */
  request<T = any>(method: string, path: string, options?: RequestOptions): Promise<TestResponse<T>>;
}

export interface TestAppOptions {
  /** Extra environment for loadConfig (e.g. API_KEYS, DUNNING_SCHEDULE). */
  env?: Record<string, string>;
  clock?: ManualClock;
  logStream?: NodeJS.WritableStream;
  /**
   * SQLite only (ignored on PostgreSQL): a database file at this path instead of memory, so
   * another connection or process can open it too. Migrated by the app.
   */
  sqliteFile?: string;
  /**
   * A second instance: this app's own connection (or pool) over `sameDatabaseAs`'s database
   * (on SQLite it must have a `sqliteFile`), with its clock unless `clock` is given; the
   * database stays for its first app to drop.
   */
  sameDatabaseAs?: TestApp;
  /** Where provider calls get their deadlines (default: real time; see provider-deadlines.ts). */
  providerDeadlines?: CallDeadlines;
}

/** The database a test app runs over (see TestAppOptions). */
async function testAppDatabase(options: TestAppOptions): Promise<MigratedTestDatabase> {
  const other = options.sameDatabaseAs;
  if (other) {
    const { config, database } = other.deps;
    if (config.database.kind === 'sqlite' && config.database.path === ':memory:') {
      throw new Error('sameDatabaseAs needs an app built with sqliteFile on SQLite');
    }
    const url = config.database.kind === 'sqlite' ? `sqlite:${config.database.path}` : config.database.url;
    return { url, schema: database.schema, sqliteImage: undefined, migrated: true, drop: async () => {} };
  }
  if (options.sqliteFile && !ON_POSTGRES) {
    return { ...(await createTestDatabase(options.sqliteFile)), sqliteImage: undefined, migrated: false };
  }
  return createMigratedTestDatabase();
}

/** Starts the app on 127.0.0.1 at a free port over a fresh database; stops it on `t.after`. */
export async function buildTestApp(t: TestContext, options: TestAppOptions = {}): Promise<TestApp> {
  const database = await testAppDatabase(options);
  const config = loadConfig({
    DATABASE_URL: database.url,
    API_KEYS: ADMIN_KEY,
    LOG_LEVEL: options.logStream ? 'info' : 'silent',
    // Off unless a test asks for it: suites that make hundreds of requests a second test
    // their module, not the limiter (src/http/rate-limit.test.ts tests that).
    RATE_LIMIT_MAX: '0',
    // No test reaches a provider on the internet: a provider API call goes to a closed local
    // port (refused at once) unless the test points it at a fake (test/helpers/fake-*.ts).
    PAYSTACK_API_URL: 'http://127.0.0.1:9',
    STRIPE_API_URL: 'http://127.0.0.1:9',
    // Required whenever a test sets a provider API key (SPEC §10); harmless otherwise.
    DATA_ENCRYPTION_KEY,
    ...options.env,
  });
  const clock = options.clock ?? options.sameDatabaseAs?.clock ?? new ManualClock(new Date('2026-01-15T10:00:00.000Z'));
  const deps = await createDeps(config, {
    clock,
    schema: database.schema,
    sqliteImage: database.sqliteImage,
    migrate: !database.migrated,
    providerDeadlines: options.providerDeadlines,
  });
  const app = await buildApp(deps, {
    logStream: options.logStream as never,
    schemaController: SHARED_SCHEMA_COMPILERS,
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  const baseUrl = `http://127.0.0.1:${port}`;
  afterTest(t, async () => {
    await app.close();
    await deps.close();
    await database.drop();
  });

  async function request<T>(method: string, path: string, opts: RequestOptions = {}): Promise<TestResponse<T>> {
    const headers: Record<string, string> = { ...opts.headers };
    const key = opts.key === undefined ? ADMIN_KEY : opts.key;
    if (key !== null && !('authorization' in headers) && !('x-api-key' in headers)) {
      headers.authorization = `Bearer ${key}`;
    }
    let body: string | Buffer | undefined;
    if (opts.rawBody !== undefined) body = opts.rawBody;
    else if (opts.body !== undefined) {
      body = JSON.stringify(opts.body);
      headers['content-type'] ??= 'application/json';
    }
    const response = await fetch(baseUrl + path, { method, headers, body });
    const text = await response.text();
    let parsed: unknown = text;
    if ((response.headers.get('content-type') ?? '').includes('application/json') && text !== '') {
      parsed = JSON.parse(text);
    }
    return { status: response.status, headers: response.headers, body: parsed as T, text };
  }

  return { app, deps, clock, baseUrl, request };
}

/**
 * A second instance's dependencies over `app`'s database (its own connection or pool, the
 * same clock and schema, no migration), as a second worker or server process would have:
 * for tests of what several instances do to one PostgreSQL database. The caller closes it.
 */
export function connectSecondInstance(app: TestApp, options: { sameClock?: boolean } = {}): Promise<Deps> {
  return createDeps(app.deps.config, {
    ...(options.sameClock === false ? {} : { clock: app.clock }),
    schema: app.deps.database.schema,
    migrate: false,
  });
}
