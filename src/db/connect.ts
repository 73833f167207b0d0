// Opens the database named by DATABASE_URL: SQLite through `node:sqlite`, or PostgreSQL
// through `pg`. Both sit behind one Kysely<Database>, so services have one query layer.
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import {
  CompiledQuery,
  type DatabaseConnection,
  type DatabaseIntrospector,
  type DatabaseMetadataOptions,
  type DialectAdapter,
  type Driver,
  Kysely,
  PostgresDialect,
  type PostgresDialectConfig,
  PostgresIntrospector,
  type SchemaMetadata,
  SqliteAdapter,
  SqliteDialect,
  sql,
  type TableMetadata,
} from 'kysely';
import pg from 'pg';
import type { DatabaseConfig } from '../config.ts';
import { type CommitVersionSource, postgresCommitVersion, sqliteCommitVersion } from './commit-version.ts';
import { registerSyncReads } from './compiled-queries.ts';
import type { Database } from './database.ts';
import { readPgTimestamp } from './pg-timestamps.ts';
import { type DatabaseTraffic, newTraffic, type StatementListener, trafficPool } from './pg-traffic.ts';
import { adaptNodeSqlite } from './sqlite-adapter.ts';

export type Dialect = 'sqlite' | 'postgres';

export interface DatabaseHandle {
  db: Kysely<Database>;
  dialect: Dialect;
  /** PostgreSQL schema the tables live in (`public` unless a search path was given); undefined on SQLite. */
  schema: string | undefined;
  /** SQLite only: the database's bytes (`DatabaseSync.serialize()`), e.g. a migrated image for `sqliteImage`. */
  serialize?: () => Uint8Array;
  /** The database's commit version: changes whenever any writer commits (db/commit-version.ts). */
  commitVersion: CommitVersionSource;
  /** What was sent to PostgreSQL: round trips and statements (pg-traffic.ts); zeros on SQLite. */
  traffic: Readonly<DatabaseTraffic>;
  /**
   * PostgreSQL: calls `listener` with the text of every statement written to the server from
   * now on (values travel apart, as parameters). Returns the unsubscribe. A no-op on SQLite.
   */
  watchStatements(listener: StatementListener): () => void;
  close(): Promise<void>;
}

export interface ConnectOptions {
  /** PostgreSQL only: the schema to use as search_path (tests give each test its own). */
  schema?: string;
  /** PostgreSQL only: pool size (default 10). */
  poolSize?: number;
  /**
   * SQLite in memory only: start from a copy of these bytes (a `serialize()` result) instead
   * of an empty database. Tests give every app a copy of one database migrated once, as
   * migrating a fresh one per test costs more than the test.
   */
  sqliteImage?: Uint8Array;
}

const PG_INT8 = 20;
const PG_TIMESTAMP = 1114;
const PG_TIMESTAMPTZ = 1184;

/** Row values as the API shows them: int8 as numbers (minor units fit in 2^53), times as ISO 8601 UTC. */
const pgTypes = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === PG_INT8) return (value: string) => Number(value);
    if (oid === PG_TIMESTAMPTZ || oid === PG_TIMESTAMP) return readPgTimestamp;
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- pg's overloads do not accept a union format
    return pg.types.getTypeParser(oid, format as any);
  },
};

/** SQLite does run DDL in transactions; saying so makes Kysely migrate inside one. */
class TransactionalDdlSqliteAdapter extends SqliteAdapter {
  override get supportsTransactionalDdl(): boolean {
    return true;
  }
}

/**
 * SqliteDialect whose transactions start with BEGIN IMMEDIATE: every transaction here
 * writes, and taking the write lock up front lets busy_timeout queue a second process
 * (e.g. the CLI beside the server) instead of failing with SQLITE_BUSY on upgrade.
 * Migrations run in such a transaction too, so processes starting together on one file
 * migrate one after the other (Kysely's own SQLite migration lock is a no-op).
 */
class ImmediateSqliteDialect extends SqliteDialect {
  override createAdapter(): DialectAdapter {
    return new TransactionalDdlSqliteAdapter();
  }

  override createDriver(): Driver {
    const driver = super.createDriver();
    driver.beginTransaction = async (connection: DatabaseConnection) => {
      await connection.executeQuery(CompiledQuery.raw('begin immediate'));
    };
    return driver;
  }
}

/**
 * WAL pages written before SQLite copies them back into the database file (SQLite's default:
 * 1,000, ≈ 4 MB). A billing run rewrites the same pages in several transactions a batch (an
 * invoice issued, then charged, then paid): a longer WAL copies each such page back once,
 * not once per checkpoint (≈ 15 % of the commits' CPU in the billing run; docs/performance.md).
 * The WAL file grows to ≈ 40 MB between checkpoints.
 */
export const SQLITE_WAL_AUTOCHECKPOINT_PAGES = 10_000;

/** How long a SQLite connection waits for another process's lock before SQLITE_BUSY (ms). */
const SQLITE_BUSY_TIMEOUT_MS = 5000;
const SQLITE_BUSY = 5;
const pause = new Int32Array(new SharedArrayBuffer(4));

/**
 * Puts a file in WAL mode, waiting up to SQLITE_BUSY_TIMEOUT_MS for other processes. On a
 * file not yet in WAL (a fresh one) the switch writes the header from inside a read
 * transaction, and SQLite then answers SQLITE_BUSY at once rather than call the busy
 * handler (https://sqlite.org/c3ref/busy_handler.html: waiting could deadlock) whenever
 * another process holds the write lock — processes opening one fresh file together. So the
 * switch is retried, with pauses of 1 ms doubling to 50 ms, until the timeout.
 * Throws node:sqlite's error when the lock outlasts the timeout or on any other error.
 */
function switchToWal(database: DatabaseSync): void {
  const deadline = performance.now() + SQLITE_BUSY_TIMEOUT_MS;
  for (let wait = 1; ; wait = Math.min(wait * 2, 50)) {
    try {
      database.exec('PRAGMA journal_mode = WAL');
      return;
    } catch (error) {
      if ((error as { errcode?: number }).errcode !== SQLITE_BUSY || performance.now() >= deadline) throw error;
      // Opening is synchronous (node:sqlite), so the pause is too; it happens only at startup.
      Atomics.wait(pause, 0, 0, wait);
    }
  }
}

function openSqlite(path: string, image: Uint8Array | undefined): DatabaseHandle {
  const inMemory = path === ':memory:';
  if (!inMemory) mkdirSync(dirname(path), { recursive: true });
  if (image && !inMemory) throw new Error('sqliteImage needs an in-memory SQLite database');
  const database = new DatabaseSync(path);
  if (image) database.deserialize(image);
  // WAL lets readers run beside the writer; FULL makes every acknowledged commit durable.
  // busy_timeout first: the statements below may meet another process's lock.
  database.exec(`PRAGMA busy_timeout = ${SQLITE_BUSY_TIMEOUT_MS}`);
  if (!inMemory) switchToWal(database);
  database.exec('PRAGMA synchronous = FULL');
  database.exec('PRAGMA foreign_keys = ON');
  if (!inMemory) database.exec(`PRAGMA wal_autocheckpoint = ${SQLITE_WAL_AUTOCHECKPOINT_PAGES}`);
  const adapted = adaptNodeSqlite(database);
  const db = new Kysely<Database>({ dialect: new ImmediateSqliteDialect({ database: adapted }) });
  // Compiled reads on this instance may skip Kysely's driver (db/compiled-queries.ts).
  registerSyncReads(db, adapted.readNow);
  return {
    db,
    dialect: 'sqlite',
    schema: undefined,
    serialize: () => database.serialize(),
    commitVersion: sqliteCommitVersion(database, inMemory),
    traffic: newTraffic(),
    watchStatements: () => () => {},
    // Kysely closes the database only if a query ever opened its connection: close it anyway,
    // so no query runs after close (a migrated test database may never have been queried).
    // Closing twice is a no-op.
    close: async () => {
      if (!database.isOpen) return;
      await db.destroy();
      if (database.isOpen) database.close();
    },
  };
}

/** Kysely's own bookkeeping tables, hidden unless asked for (as Kysely's introspectors do). */
const KYSELY_TABLES = new Set(['kysely_migration', 'kysely_migration_lock']);

/**
 * Introspects ONE schema. Kysely's PostgresIntrospector reads every schema in the database,
 * and calls functions that look relations up by name, so a schema dropped meanwhile (by
 * another tenant, or a parallel test) makes the Migrator's "does my table exist?" fail.
 * The Migrator only needs its own schema's tables.
 */
class SchemaIntrospector implements DatabaseIntrospector {
  readonly #db: Kysely<unknown>;
  readonly #schema: string;

  constructor(db: Kysely<unknown>, schema: string) {
    this.#db = db;
    this.#schema = schema;
  }

  getSchemas(): Promise<SchemaMetadata[]> {
    return new PostgresIntrospector(this.#db).getSchemas();
  }

  async getTables(options: DatabaseMetadataOptions = { withInternalKyselyTables: false }): Promise<TableMetadata[]> {
    const { rows } = await sql<{
      table_name: string;
      is_view: boolean;
      is_foreign: boolean;
      column_name: string | null;
      data_type: string | null;
      is_nullable: boolean | null;
      has_default: boolean | null;
      is_identity: boolean | null;
    }>`
      select c.relname as table_name, c.relkind = 'v' as is_view, c.relkind = 'f' as is_foreign,
             a.attname as column_name,
             format_type(a.atttypid, a.atttypmod) as data_type, not a.attnotnull as is_nullable,
             a.atthasdef as has_default, a.attidentity <> '' as is_identity
      from pg_catalog.pg_class c
      join pg_catalog.pg_namespace n on n.oid = c.relnamespace
      left join pg_catalog.pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
      where n.nspname = ${this.#schema} and c.relkind in ('r', 'v', 'p', 'f')
      order by c.relname, a.attnum`.execute(this.#db);
    const tables = new Map<string, TableMetadata>();
    for (const row of rows) {
      if (!options.withInternalKyselyTables && KYSELY_TABLES.has(row.table_name)) continue;
      const table = tables.get(row.table_name) ?? {
        name: row.table_name,
        isView: row.is_view,
        isForeign: row.is_foreign,
        schema: this.#schema,
        columns: [],
      };
      tables.set(row.table_name, table);
      if (row.column_name === null) continue;
      table.columns.push({
        name: row.column_name,
        dataType: row.data_type ?? '',
        isNullable: row.is_nullable ?? true,
        isAutoIncrementing: row.is_identity ?? false,
        hasDefaultValue: row.has_default ?? false,
      });
    }
    return [...tables.values()];
  }
}

/** PostgresDialect whose introspection (used by the Migrator) stays within `schema`. */
class SchemaScopedPostgresDialect extends PostgresDialect {
  readonly #schema: string;

  constructor(config: PostgresDialectConfig, schema: string) {
    super(config);
    this.#schema = schema;
  }

  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- Kysely's signature
  override createIntrospector(db: Kysely<any>): DatabaseIntrospector {
    return new SchemaIntrospector(db, this.#schema);
  }
}

/**
 * Settings of every session: UTC and ISO dates, so that no server or role default (a
 * `TimeZone` of Africa/Lagos, a `DateStyle` of SQL, DMY) changes how a timestamp reads or how
 * SQL date arithmetic runs; the schema as search_path when given. `-c` options are startup
 * parameters, which override the server's and the role's defaults.
 */
function sessionOptions(schema: string | undefined): string {
  const settings = ['-c TimeZone=UTC', '-c DateStyle=ISO'];
  if (schema) settings.push(`-c search_path=${schema}`);
  return settings.join(' ');
}

function openPostgres(url: string, options: ConnectOptions): DatabaseHandle {
  const schema = options.schema ?? 'public';
  const pool = new pg.Pool({
    connectionString: url,
    max: options.poolSize ?? 10,
    types: pgTypes,
    options: sessionOptions(options.schema),
    // Statements are written without waiting for earlier answers (db/pg-traffic.ts).
    pipeline: true,
  });
  // An idle client losing its connection must not crash the process; the pool replaces it.
  pool.on('error', () => {});
  const traffic: DatabaseTraffic = newTraffic();
  const listeners = new Set<StatementListener>();
  const db = new Kysely<Database>({
    dialect: new SchemaScopedPostgresDialect(
      { pool: trafficPool(pool, traffic, listeners) as unknown as pg.Pool },
      schema,
    ),
  });
  return {
    db,
    dialect: 'postgres',
    schema,
    commitVersion: postgresCommitVersion(pool),
    traffic,
    watchStatements: (listener) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    // As on SQLite: Kysely ends the pool only if a query ever used it; closing twice is a no-op.
    close: async () => {
      if (pool.ended) return;
      await db.destroy();
      if (!pool.ended) await pool.end();
    },
  };
}

/**
 * Opens the configured database. SQLite: WAL, synchronous=FULL, foreign keys, 5 s busy
 * timeout; the file's directory is created. PostgreSQL: a `pg` pool. Does not migrate.
 */
export function openDatabase(config: DatabaseConfig, options: ConnectOptions = {}): DatabaseHandle {
  return config.kind === 'sqlite' ? openSqlite(config.path, options.sqliteImage) : openPostgres(config.url, options);
}
