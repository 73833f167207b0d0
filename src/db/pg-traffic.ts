// PostgreSQL traffic: what the pool sends, counted, with fewer round trips.
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
// A read whose answer a caller will want soon can be PREFETCHED (`prefetch`): it travels
// right AFTER the next statement, in the same message, and its answer is kept; when the
// caller then runs exactly that statement (same text, same values) it gets the kept answer
// without a round trip. A kept answer is dropped as soon as anything else is sent (it stands
// for "the statement as run now"; the caller vouches that the writes it deferred in between
// cannot change it), and at COMMIT/ROLLBACK; an unused prefetch costs the server a read, never
// a round trip. Not sent at all when the statement it would follow cannot carry it.
// Travelling together needs the parameters written into the text: only strings, finite
// numbers, booleans and null are (escaped by pg's escapeLiteral), and only in place of `$n`
// outside quotes and comments (a `$1` inside a literal is never touched; a statement with
// E'' strings, dollar quotes or nested comments is not rewritten); otherwise the waiting
// statements go first in a round trip of their own.
import { AsyncLocalStorage } from 'node:async_hooks';
import pg from 'pg';
import type { CompiledQuery, Kysely, RawBuilder, Transaction } from 'kysely';
import { isPostgres } from './column-types.ts';
import type { Database } from './database.ts';

/** Counts of messages sent to PostgreSQL (monotonic; zero on SQLite). */
export interface TrafficCount {
  /** Messages sent and answered: each one network round trip. */
  roundTrips: number;
  /** SQL statements they carried, BEGIN/COMMIT/SAVEPOINT included (≥ roundTrips). */
  statements: number;
}

/** What one database handle sent to PostgreSQL: all of it, and the worker's part (countAsWorker). */
export interface DatabaseTraffic extends TrafficCount {
  /** Sent by work run inside countAsWorker (the background jobs and webhook dispatcher). */
  worker: TrafficCount;
}

/** A new zeroed traffic count. */
export function newTraffic(): DatabaseTraffic {
  return { roundTrips: 0, statements: 0, worker: { roundTrips: 0, statements: 0 } };
}

/** Set (to true) inside countAsWorker. */
const workerContext = new AsyncLocalStorage<boolean>();

/**
 * Runs `work` so that what it (and everything it starts) sends counts as the worker's
 * (`traffic.worker`) as well as in the total: the round trips per provider event split into
 * the request's and the background's. Returns what `work` returns.
 */
export function countAsWorker<T>(work: () => T): T {
  return workerContext.run(true, work);
}

function count(traffic: DatabaseTraffic, roundTrips: number, statements: number): void {
  traffic.roundTrips += roundTrips;
  traffic.statements += statements;
  if (workerContext.getStore() === true) {
    traffic.worker.roundTrips += roundTrips;
    traffic.worker.statements += statements;
  }
}

/** Marks a statement deferrable (a comment PostgreSQL ignores). */
const DEFER_MARK = '/* deferrable */ ';
/** Marks a statement to prefetch (stripped before it is sent). */
const PREFETCH_MARK = '/* prefetch */ ';

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

/**
 * One token of SQL text that `$n` must not be replaced in (a quoted literal or identifier, a
 * comment), a `$n`, or a `$` of anything else (a dollar quote: the text is not rewritten).
 */
const SQL_TOKENS = /'(?:[^']|'')*'|"(?:[^"]|"")*"|--[^\n]*|\/\*[\s\S]*?\*\/|(?<![\w$])\$(\d+)(?![\w$])|\$/g;
/** The start of an E'' string (backslash escapes), which SQL_TOKENS would misread. */
const UNSCANNABLE = /(?<![\w$])[eE]'/;

/** `text` with `$n` replaced by the literal of `values[n-1]`, or undefined when that is unsafe (see header). */
function inline(text: string, values: readonly unknown[] | undefined): string | undefined {
  if (!values || values.length === 0) return text;
  // E'' strings (backslash escapes) and unclosed quotes or comments: not scanned right.
  if (UNSCANNABLE.test(text) || /['"]|\/\*/.test(text.replace(SQL_TOKENS, ''))) return undefined;
  const literals: string[] = [];
  for (const value of values) {
    const written = literal(value);
    if (written === undefined) return undefined;
    literals.push(written);
  }
  let ok = true;
  const result = text.replace(SQL_TOKENS, (token: string, n: string | undefined) => {
    if (n !== undefined) {
      const written = literals[Number(n) - 1];
      if (written === undefined) ok = false;
      return written ?? '';
    }
    // A dollar quote, or a comment that may nest (PostgreSQL's do): leave the text alone.
    if (token === '$' || (token.startsWith('/*') && token.slice(2).includes('/*'))) ok = false;
    return token;
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
  /** Prefetches waiting to travel after the next statement, parameters written in. */
  #trailing: string[] = [];
  /** Answers of the prefetches of the last message, by their text (parameters written in). */
  #prefetched = new Map<string, QueryResultLike>();
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
    this.#endTransaction();
    this.#client.release(error);
  }

  #endTransaction(): void {
    this.#waiting = [];
    this.#trailing = [];
    this.#prefetched.clear();
    this.#inTransaction = false;
    this.#beginWaiting = false;
  }

  /**
   * Sends `text` (with `values`, or with the waiting statements before it and the
   * prefetches after it when `parts` says how many of each it carries) and answers the
   * caller's statement's result; keeps the prefetches' answers.
   */
  async #send(
    text: string,
    values: readonly unknown[] | undefined,
    parts: { before: number; after: readonly string[] } = { before: 0, after: [] },
  ): Promise<QueryResultLike> {
    const statements = parts.before + 1 + parts.after.length;
    this.#prefetched.clear();
    count(this.#traffic, 1, statements);
    const result = (await this.#client.query(text, values as unknown[] | undefined)) as
      QueryResultLike | QueryResultLike[];
    // A message of several statements answers one result each, in order.
    if (!Array.isArray(result)) return result;
    parts.after.forEach((prefetch, i) => this.#prefetched.set(prefetch, result[parts.before + 1 + i]!));
    return result[parts.before]!;
  }

  async #flush(): Promise<void> {
    if (this.#waiting.length === 0) return;
    const waiting = this.#waiting;
    this.#waiting = [];
    this.#beginWaiting = false;
    const last = waiting.pop()!;
    await this.#send([...waiting, last].join(';\n'), undefined, { before: waiting.length, after: [] });
  }

  async query(text: unknown, values?: readonly unknown[]): Promise<unknown> {
    if (typeof text !== 'string') {
      // A cursor (streamed query): sent on its own, after whatever waits.
      await this.#flush();
      this.#prefetched.clear();
      count(this.#traffic, 1, 1);
      return this.#client.query(text as pg.QueryConfig, values as unknown[] | undefined);
    }
    if (this.#prefetched.size > 0) {
      const kept = this.#prefetched.get(inline(text, values) ?? '');
      if (kept !== undefined) {
        this.#prefetched.delete(inline(text, values)!);
        return kept;
      }
    }
    const command = text.trim().toLowerCase();
    if (command === 'begin' && !this.#inTransaction) {
      this.#inTransaction = true;
      this.#beginWaiting = true;
      this.#waiting = ['begin'];
      return answered('BEGIN');
    }
    if (text.startsWith(PREFETCH_MARK)) {
      // Only an optimisation: outside a transaction, or not writable into text, it is dropped.
      const written = this.#inTransaction ? inline(text.slice(PREFETCH_MARK.length), values) : undefined;
      // One already answered (and not asked for yet) or on its way needs no second run.
      if (written !== undefined && !this.#prefetched.has(written) && !this.#trailing.includes(written)) {
        this.#trailing.push(written);
      }
      return answered('PREFETCH');
    }
    if (this.#inTransaction && (isSavepoint(command) || text.startsWith(DEFER_MARK))) {
      const written = inline(text, values);
      if (written !== undefined) {
        this.#waiting.push(written);
        return answered(isSavepoint(command) ? 'SAVEPOINT' : 'DEFERRED');
      }
    }
    if (command === 'rollback') {
      const nothingSent = this.#beginWaiting;
      this.#endTransaction();
      // Nothing of the transaction reached the server: there is nothing to roll back.
      if (nothingSent) return answered('ROLLBACK');
      return this.#send(text, values);
    }
    if (command === 'commit') {
      const empty = this.#beginWaiting && this.#waiting.length === 1;
      const waiting = this.#waiting;
      this.#endTransaction();
      // An empty transaction: nothing to send.
      if (empty) return answered('COMMIT');
      this.#waiting = waiting;
    }
    // Prefetches follow a statement of the transaction's own work, not its control.
    const carries = this.#trailing.length > 0 && this.#inTransaction && !/^(rollback|release)\s/.test(command);
    if (!carries) this.#trailing = [];
    if (this.#waiting.length > 0 || carries) {
      const written = inline(text, values);
      if (written !== undefined) {
        const before = this.#waiting;
        // A prefetch of the very statement that carries it would only run it twice.
        const after = carries ? this.#trailing.filter((prefetched) => prefetched !== written) : [];
        this.#waiting = [];
        this.#trailing = [];
        this.#beginWaiting = false;
        return this.#send([...before, written, ...after].join(';\n'), undefined, { before: before.length, after });
      }
      await this.#flush();
    }
    return this.#send(text, values);
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

/**
 * Sends `query` (a read whose answer the caller will want soon) right after the next
 * statement of `trx`, in the same message, and keeps its answer: running exactly `query`
 * (same text, same values) before anything else is sent returns it without a round trip
 * (see the header). The caller vouches that nothing it defers in between changes the answer.
 * Costs no round trip of its own; does nothing on SQLite or outside a transaction.
 */
export async function prefetch(trx: Transaction<Database>, query: CompiledQuery): Promise<void> {
  if (!isPostgres(trx)) return;
  await trx.executeQuery({ ...query, sql: PREFETCH_MARK + query.sql });
}
