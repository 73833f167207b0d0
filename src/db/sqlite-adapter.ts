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
 * Wraps an open `DatabaseSync` for Kysely. Prepared statements are cached by SQL text
 * (Kysely compiles the same text for the same query shape), bounded at 500 entries.
 */
export function adaptNodeSqlite(database: DatabaseSync): SqliteDatabase {
  const cache = new Map<string, SqliteStatement>();
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
  };
}
