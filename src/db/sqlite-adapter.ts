// Adapts Node's built-in `node:sqlite` to the shape Kysely's SqliteDialect drives
// (better-sqlite3's: prepare → reader/all/run/iterate). Kysely serialises access to the
// one connection with its own mutex, so a transaction never interleaves with another query.
import type { DatabaseSync, SQLInputValue, StatementSync } from 'node:sqlite';
import type { SqliteDatabase, SqliteStatement } from 'kysely';

const STATEMENT_CACHE_LIMIT = 500;

/** node:sqlite binds only null, numbers, bigints, strings and bytes; map the rest. */
function toSqliteValue(value: unknown): SQLInputValue {
  if (value === undefined || value === null) return null;
  if (typeof value === 'boolean') return value ? 1 : 0;
  if (value instanceof Date) return value.toISOString();
  return value as SQLInputValue;
}

function bind(parameters: ReadonlyArray<unknown>): SQLInputValue[] {
  return parameters.map(toSqliteValue);
}

function adaptStatement(statement: StatementSync): SqliteStatement {
  return {
    reader: statement.columns().length > 0,
    all: (parameters) => statement.all(...bind(parameters)),
    run: (parameters) => statement.run(...bind(parameters)),
    iterate: (parameters) => statement.iterate(...bind(parameters)),
  };
}

/**
 * Runs a read-only statement at once, outside Kysely, when that is safe: rows, or undefined
 * when the connection is inside a transaction (the caller then goes through Kysely, whose
 * connection lock makes it wait for the transaction to end: a read must never see rows a
 * transaction has not committed).
 */
export type SyncSqliteRead = (sql: string, parameters: ReadonlyArray<unknown>) => unknown[] | undefined;

/** Kysely's view of the connection, plus the synchronous read path (SyncSqliteRead). */
export interface AdaptedSqlite extends SqliteDatabase {
  readNow: SyncSqliteRead;
}

/**
 * Wraps an open `DatabaseSync` for Kysely. Prepared statements are cached by SQL text
 * (Kysely compiles the same text for the same query shape), bounded at 500 entries.
 * `readNow` runs a read on the same statements without Kysely's driver (its connection
 * lock, and the promises around every query): node:sqlite is synchronous, so outside a
 * transaction a statement runs whole before anything else can touch the connection.
 */
export function adaptNodeSqlite(database: DatabaseSync): AdaptedSqlite {
  const cache = new Map<string, SqliteStatement>();
  const raw = new Map<string, StatementSync>();
  return {
    close: () => database.close(),
    prepare(sql: string): SqliteStatement {
      let statement = cache.get(sql);
      if (!statement) {
        if (cache.size >= STATEMENT_CACHE_LIMIT) cache.clear();
        statement = adaptStatement(database.prepare(sql));
        cache.set(sql, statement);
      }
      return statement;
    },
    readNow(sql, parameters) {
      if (database.isTransaction) return undefined;
      let statement = raw.get(sql);
      if (!statement) {
        if (raw.size >= STATEMENT_CACHE_LIMIT) raw.clear();
        statement = database.prepare(sql);
        raw.set(sql, statement);
      }
      return statement.all(...bind(parameters));
    },
  };
}
