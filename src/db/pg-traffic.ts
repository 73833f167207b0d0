// PostgreSQL traffic: what the pool sends, counted, with fewer round trips (issue 13).
//
// Every statement costs a network round trip. Two kinds of statement need no answer before
// the next one is sent, so they wait and travel WITH the next statement, as one simple-query
// message (`a; b; c`, run in order, one round trip):
//   - BEGIN (and SAVEPOINT): their only answer is "ok";
//   - statements a caller marks deferrable (`executeDeferred`): an INSERT nobody reads back,
//     an advisory lock, a NOTIFY. Their result is never returned; an error they raise is
//     thrown by the statement they travel with (the transaction is aborted either way, so
//     nothing commits and the caller's retry or rollback runs as before).
// A transaction rolled back before anything was sent costs nothing; a COMMIT carries what
// is waiting. Only inside a transaction: outside one, every statement is sent as it comes.
// Travelling together needs the parameters written into the text: only strings, finite
// numbers, booleans and null are (escaped by pg's escapeLiteral), and only into statements
// without quotes of their own (so a `$1` inside a literal is never touched); otherwise the
// waiting statements go first in a round trip of their own.
import pg from 'pg';
import type { CompiledQuery, Kysely, RawBuilder, Transaction } from 'kysely';
import { isPostgres } from './column-types.ts';
import type { Database } from './database.ts';

/** Counts of what one database handle sent to PostgreSQL (monotonic; zero on SQLite). */
export interface DatabaseTraffic {
  /** Messages sent and answered: each one network round trip. */
  roundTrips: number;
  /** SQL statements they carried, BEGIN/COMMIT/SAVEPOINT included (≥ roundTrips). */
  statements: number;
}

/** Marks a statement deferrable (a comment PostgreSQL ignores). */
const DEFER_MARK = '/* deferrable */ ';

interface QueryResultLike {
  command: string;
  rowCount: number | null;
  rows: unknown[];
}

const answered = (command: string): QueryResultLike => ({ command, rowCount: null, rows: [] });

/** `value` as an SQL literal, or undefined when it is not a plain scalar. */
function literal(value: unknown): string | undefined {
  if (value === null || value === undefined) return 'NULL';
  if (typeof value === 'string') return value.includes('\0') ? undefined : pg.escapeLiteral(value);
  if (typeof value === 'number') return Number.isFinite(value) ? `(${value})` : undefined;
  if (typeof value === 'boolean') return value ? 'TRUE' : 'FALSE';
  return undefined;
}

/** `text` with `$n` replaced by the literal of `values[n-1]`, or undefined when that is unsafe (see header). */
function inline(text: string, values: readonly unknown[] | undefined): string | undefined {
  if (!values || values.length === 0) return text;
  if (text.includes("'") || text.includes('$$')) return undefined;
  const literals: string[] = [];
  for (const value of values) {
    const written = literal(value);
    if (written === undefined) return undefined;
    literals.push(written);
  }
  let ok = true;
  const result = text.replace(/\$(\d+)/g, (_, n: string) => {
    const written = literals[Number(n) - 1];
    if (written === undefined) ok = false;
    return written ?? '';
  });
  return ok ? result : undefined;
}

const isSavepoint = (text: string) => /^savepoint\s/i.test(text);

/**
 * A pool client that counts what it sends and lets BEGIN, SAVEPOINT and deferrable
 * statements travel with the next statement (see the header). Kysely's PostgreSQL driver
 * uses `query(text, values)`, `release()` and `processID`; cursors pass through.
 */
class TrafficClient {
  readonly #client: pg.PoolClient;
  readonly #traffic: DatabaseTraffic;
  /** Statements waiting for the next one, parameters written in. */
  #waiting: string[] = [];
  #inTransaction = false;
  /** True while BEGIN itself is still waiting (nothing of the transaction was sent). */
  #beginWaiting = false;

  constructor(client: pg.PoolClient, traffic: DatabaseTraffic) {
    this.#client = client;
    this.#traffic = traffic;
  }

  get processID(): number | undefined {
    return (this.#client as unknown as { processID?: number }).processID;
  }

  release(error?: Error | boolean): void {
    this.#waiting = [];
    this.#inTransaction = false;
    this.#beginWaiting = false;
    this.#client.release(error);
  }

  async #send(text: string, values: readonly unknown[] | undefined, statements: number): Promise<QueryResultLike> {
    this.#traffic.roundTrips += 1;
    this.#traffic.statements += statements;
    const result = (await this.#client.query(text, values as unknown[] | undefined)) as
      QueryResultLike | QueryResultLike[];
    // A message of several statements answers one result each: the caller's is the last.
    return Array.isArray(result) ? result[result.length - 1]! : result;
  }

  async #flush(): Promise<void> {
    if (this.#waiting.length === 0) return;
    const waiting = this.#waiting;
    this.#waiting = [];
    this.#beginWaiting = false;
    await this.#send(waiting.join(';\n'), undefined, waiting.length);
  }

  async query(text: unknown, values?: readonly unknown[]): Promise<unknown> {
    if (typeof text !== 'string') {
      // A cursor (streamed query): sent on its own, after whatever waits.
      await this.#flush();
      this.#traffic.roundTrips += 1;
      this.#traffic.statements += 1;
      return this.#client.query(text as pg.QueryConfig, values as unknown[] | undefined);
    }
    const command = text.trim().toLowerCase();
    if (command === 'begin' && !this.#inTransaction) {
      this.#inTransaction = true;
      this.#beginWaiting = true;
      this.#waiting = ['begin'];
      return answered('BEGIN');
    }
    if (this.#inTransaction && (isSavepoint(command) || text.startsWith(DEFER_MARK))) {
      const written = inline(text, values);
      if (written !== undefined) {
        this.#waiting.push(written);
        return answered(isSavepoint(command) ? 'SAVEPOINT' : 'DEFERRED');
      }
    }
    if (command === 'rollback') {
      this.#inTransaction = false;
      const nothingSent = this.#beginWaiting;
      this.#waiting = [];
      this.#beginWaiting = false;
      // Nothing of the transaction reached the server: there is nothing to roll back.
      if (nothingSent) return answered('ROLLBACK');
      return this.#send(text, values, 1);
    }
    if (command === 'commit') {
      this.#inTransaction = false;
      if (this.#beginWaiting && this.#waiting.length === 1) {
        // An empty transaction: nothing to send.
        this.#waiting = [];
        this.#beginWaiting = false;
        return answered('COMMIT');
      }
    }
    if (this.#waiting.length > 0) {
      const written = inline(text, values);
      if (written !== undefined) {
        const message = [...this.#waiting, written].join(';\n');
        const statements = this.#waiting.length + 1;
        this.#waiting = [];
        this.#beginWaiting = false;
        return this.#send(message, undefined, statements);
      }
      await this.#flush();
    }
    return this.#send(text, values, 1);
  }
}

/** The part of pg.Pool Kysely's PostgresDialect uses. */
interface PoolLike {
  connect(): Promise<TrafficClient>;
  end(): Promise<void>;
  readonly options: pg.PoolOptions;
  readonly Client: typeof pg.Client;
}

/**
 * Wraps `pool` for Kysely: each client counts into `traffic` and saves round trips (see the
 * header). One wrapper per pooled client, so Kysely's per-client state stays per client.
 */
export function trafficPool(pool: pg.Pool, traffic: DatabaseTraffic): PoolLike {
  const wrappers = new WeakMap<pg.PoolClient, TrafficClient>();
  return {
    async connect() {
      const client = await pool.connect();
      let wrapper = wrappers.get(client);
      if (!wrapper) {
        wrapper = new TrafficClient(client, traffic);
        wrappers.set(client, wrapper);
      }
      return wrapper;
    },
    end: () => pool.end(),
    get options() {
      return pool.options;
    },
    Client: pg.Client,
  };
}

type Executable = { compile(): CompiledQuery } | RawBuilder<unknown>;

/**
 * Runs `query` inside `trx` when its result is not needed: on PostgreSQL it travels with the
 * transaction's next statement (see the header), so an error it raises is thrown there
 * instead (the transaction fails either way). Use only for statements whose failure no
 * caller handles on its own (an INSERT of a fresh row, an advisory lock, a NOTIFY).
 * On SQLite it simply runs.
 */
export async function executeDeferred(trx: Transaction<Database> | Kysely<Database>, query: Executable): Promise<void> {
  const compiled = query.compile(trx as Kysely<Database>);
  if (!isPostgres(trx)) {
    await trx.executeQuery(compiled);
    return;
  }
  await trx.executeQuery({ ...compiled, sql: DEFER_MARK + compiled.sql });
}
