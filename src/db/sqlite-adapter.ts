// Adapts Node's built-in `node:sqlite` to the shape Kysely's SqliteDialect drives
// (better-sqlite3's: prepare → reader/all/run/iterate). Kysely serialises access to the
// one connection with its own mutex, so a transaction never interleaves with another query.
import type { DatabaseSync, SQLInputValue, StatementSync } from 'node:sqlite';
import type { SqliteDatabase, SqliteStatement } from 'kysely';
import { type ArrayToObject, arrayToObject } from '../shared/object-shapes.ts';

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

/** How one statement's rows, read as arrays, become objects: its columns as of `version`. */
interface RowShape {
  toObject: ArrayToObject;
  /** The schema version (`pragma schema_version`) read before `toObject`'s columns were. */
  version: number;
}

/**
 * Row objects for one connection's statements. node:sqlite's own row objects have a null
 * prototype, which V8 keeps as dictionaries: spreading one costs ≈ 40× a plain object's copy
 * and rows are spread into every event and response. So statements return arrays, turned
 * into plain objects of one shape per statement (shared/object-shapes.ts; a repeated name
 * keeps its last value, as node:sqlite's objects do) — cheaper to read as well.
 * A statement's columns can change under it (`select *` after another process's migration:
 * SQLite prepares it again on its next run), so each read checks the schema version after
 * its rows came: versions only grow, so an unchanged version proves the columns are those
 * the shape was made from; a changed one rebuilds the shape from the columns of the run that
 * produced the rows. Costs one `pragma schema_version` (≈ 1.5 µs) per read.
 */
class RowShapes {
  readonly #version: StatementSync;

  constructor(database: DatabaseSync) {
    this.#version = database.prepare('pragma schema_version');
    this.#version.setReturnArrays(true);
  }

  #schemaVersion(): number {
    return Number((this.#version.get() as unknown as unknown[])[0]);
  }

  /**
   * Makes `statement` return arrays and gives its RowShape; undefined (node:sqlite's objects
   * kept) for a statement without columns or with a column named `__proto__`.
   */
  shapeOf(statement: StatementSync): RowShape | undefined {
    // The version first: a migration between the two reads leaves it older than the columns.
    const version = this.#schemaVersion();
    const names = statement.columns().map((column) => column.name);
    if (names.length === 0 || names.includes('__proto__')) return undefined;
    statement.setReturnArrays(true);
    return { toObject: arrayToObject(names), version };
  }

  /** `shape`, current for rows `statement` has just produced (see the class). */
  current(statement: StatementSync, shape: RowShape): ArrayToObject {
    const version = this.#schemaVersion();
    if (version !== shape.version) {
      shape.toObject = arrayToObject(statement.columns().map((column) => column.name));
      shape.version = version;
    }
    return shape.toObject;
  }

  /** `statement.all` with rows as plain objects. */
  all(statement: StatementSync, shape: RowShape | undefined, parameters: ReadonlyArray<unknown>): unknown[] {
    const rows = statement.all(...bind(parameters));
    if (!shape) return rows;
    return (rows as unknown as unknown[][]).map(this.current(statement, shape));
  }

  /** `statement.iterate` with rows as plain objects (the shape checked once the first row came). */
  *iterate(statement: StatementSync, shape: RowShape | undefined, parameters: ReadonlyArray<unknown>) {
    let toObject: ArrayToObject | undefined;
    for (const values of statement.iterate(...bind(parameters))) {
      if (!shape) {
        yield values;
        continue;
      }
      toObject ??= this.current(statement, shape);
      yield toObject(values as unknown as unknown[]);
    }
  }
}

function adaptStatement(statement: StatementSync, rows: RowShapes): SqliteStatement {
  const shape = rows.shapeOf(statement);
  return {
    // columns() costs ≈ 20 µs on a wide statement: asked again only when no shape was made.
    reader: shape !== undefined || statement.columns().length > 0,
    all: (parameters) => rows.all(statement, shape, parameters),
    run: (parameters) => statement.run(...bind(parameters)),
    iterate: (parameters) => rows.iterate(statement, shape, parameters),
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
  const raw = new Map<string, { statement: StatementSync; shape: RowShape | undefined }>();
  const rows = new RowShapes(database);
  return {
    close: () => database.close(),
    prepare(sql: string): SqliteStatement {
      let statement = cache.get(sql);
      if (!statement) {
        if (cache.size >= STATEMENT_CACHE_LIMIT) cache.clear();
        statement = adaptStatement(database.prepare(sql), rows);
        cache.set(sql, statement);
      }
      return statement;
    },
    readNow(sql, parameters) {
      if (database.isTransaction) return undefined;
      let entry = raw.get(sql);
      if (!entry) {
        if (raw.size >= STATEMENT_CACHE_LIMIT) raw.clear();
        const statement = database.prepare(sql);
        entry = { statement, shape: rows.shapeOf(statement) };
        raw.set(sql, entry);
      }
      return rows.all(entry.statement, entry.shape, parameters);
    },
  };
}
