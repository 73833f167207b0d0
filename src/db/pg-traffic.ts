// PostgreSQL traffic: what the pool sends, counted, with fewer round trips — every value bound
// as a parameter, never written into SQL text.
//
// Clients run in pg's pipeline mode: a statement is written to the socket without waiting for
// the answers of those before it, each with its own Parse/Bind/Execute/Sync, so its values
// travel as parameters. A statement whose only answer is "ok" — BEGIN, SAVEPOINT, RELEASE —
// is not sent on its own: it waits and is written right before the transaction's next
// statement, and the caller waits once for both (one round trip). Its error, if it has one,
// is thrown by that next statement (a transaction whose BEGIN or SAVEPOINT failed cannot go
// on anyway). A transaction rolled back before anything was sent costs nothing, and so does
// one that commits without having sent anything. Functions of db/ that send statements whose
// answer nobody reads (an advisory lock, a count delta, a NOTIFY) hand them over with
// `sendWithNextStatement`: the same path, for db/ only — module code never names it.
// A statement text with bound values sent a second time becomes a named prepared statement
// (StatementNames): each connection parses and analyses it once, and PostgreSQL plans it
// without parsing again — most of the server's CPU for a small indexed statement. A migration
// that changes a prepared `select *`'s columns while the process runs makes PostgreSQL refuse
// it ("cached plan must not change result type"): every name is then dropped for fresh ones,
// a statement outside a transaction is sent again at once, and a transaction fails with an
// error transactionWithRetry reruns (db/errors.ts isRetryableConflict).
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Writable } from 'node:stream';
import pg from 'pg';
import type { CompiledQuery, Kysely, RawBuilder, Transaction } from 'kysely';
import { isPostgres } from './column-types.ts';
import type { Database } from './database.ts';
import { isStalePreparedStatement } from './errors.ts';

/** Counts of messages sent to PostgreSQL (monotonic; zero on SQLite). */
export interface TrafficCount {
  /** Times the client sent and then waited for answers: each one network round trip. */
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

/** Receives the text of every statement as it is written to the socket (tests). */
export type StatementListener = (text: string) => void;

/** Marks a statement db/ sends without reading its answer (a comment PostgreSQL ignores). */
const WITH_NEXT_MARK = '/* with next */ ';

interface QueryResultLike {
  command: string;
  rowCount: number | null;
  rows: unknown[];
}

const answered = (command: string): QueryResultLike => ({ command, rowCount: null, rows: [] });

interface Statement {
  text: string;
  values: readonly unknown[] | undefined;
}

const isBegin = (command: string) => command === 'begin' || command.startsWith('start transaction');
const isSavepointOrRelease = (command: string) => /^(savepoint|release)\s/.test(command);

/**
 * The part of pg's Connection that writes statements (pg 8: parse and bind for extended, query
 * for simple) and the texts of the named statements it has parsed or sent.
 */
interface WireConnection {
  parse(query: { text: string; name?: string }): void;
  bind(config: { statement?: string }): void;
  query(text: string): void;
  parsedStatements: Record<string, string>;
  submittedNamedStatements: Record<string, string>;
}

/**
 * Shows `listeners` the text of every statement `client` writes, as it goes onto the wire
 * (below pg and any wrapper: what the server is sent). A named statement's text is shown at
 * each execution (its Bind), not only when it is parsed.
 */
function watchWire(client: pg.Client, listeners: ReadonlySet<StatementListener>): void {
  const connection = (client as unknown as { connection: WireConnection }).connection;
  const parse = connection.parse.bind(connection);
  const bind = connection.bind.bind(connection);
  const simple = connection.query.bind(connection);
  connection.parse = (query) => {
    if (!query.name) for (const listener of listeners) listener(query.text);
    parse(query);
  };
  connection.bind = (config) => {
    const name = config.statement;
    const text = name ? (connection.parsedStatements[name] ?? connection.submittedNamedStatements[name]) : undefined;
    if (text !== undefined) for (const listener of listeners) listener(text);
    bind(config);
  };
  connection.query = (text) => {
    for (const listener of listeners) listener(text);
    simple(text);
  };
}

/** Distinct texts prepared under a name at most (per process; each connection parses those it runs). */
const MAX_NAMED_STATEMENTS = 256;
/** Texts seen once that are remembered at most; past it they are forgotten and start again. */
const MAX_SEEN_ONCE = 4096;

/**
 * Names of prepared statements, by text: a text with bound values gets a name the second time
 * it is sent (a text sent once — an ad hoc statement — costs the server nothing to keep), up
 * to MAX_NAMED_STATEMENTS texts, so that what each connection keeps prepared stays bounded.
 * `stale()` drops every name for fresh ones (a migration changed a prepared statement's
 * columns); the statements under the old names stay on their connections, unused, until the
 * connection closes.
 */
export class StatementNames {
  #names = new Map<string, string>();
  #seenOnce = new Set<string>();
  #generation = 0;

  /** The name to prepare `text` under, or undefined to send it unnamed. */
  nameOf(text: string): string | undefined {
    const name = this.#names.get(text);
    if (name !== undefined || this.#names.size >= MAX_NAMED_STATEMENTS) return name;
    if (!this.#seenOnce.has(text)) {
      if (this.#seenOnce.size >= MAX_SEEN_ONCE) this.#seenOnce.clear();
      this.#seenOnce.add(text);
      return undefined;
    }
    this.#seenOnce.delete(text);
    const fresh = `billing_${this.#generation}_${this.#names.size}`;
    this.#names.set(text, fresh);
    return fresh;
  }

  /** Drops every name: texts are prepared again, under new names. */
  stale(): void {
    this.#generation++;
    this.#names.clear();
  }
}

/** A column as pg reads it from a RowDescription. */
interface FieldDescription {
  name: string;
  dataTypeID: number;
  format: string;
}

/** What pg 8's result builder (lib/result.js) keeps of a RowDescription. */
interface ResultInternals {
  addFields(this: ResultInternals, fields: FieldDescription[]): void;
  fields: FieldDescription[];
  _parsers: unknown[] | undefined;
  _prebuiltEmptyResultObject: object;
}

interface RowShape {
  fields: FieldDescription[];
  parsers: unknown[] | undefined;
  empty: object;
}

function sameColumns(a: FieldDescription[], b: FieldDescription[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!;
    const y = b[i]!;
    if (x.name !== y.name || x.dataTypeID !== y.dataTypeID || x.format !== y.format) return false;
  }
  return true;
}

/**
 * A pool client that counts what it sends and lets BEGIN, SAVEPOINT, RELEASE and db/'s
 * answerless statements travel in front of the next statement (see the header). Kysely's
 * PostgreSQL driver uses `query(text, values)`, `release()` and `processID`.
 */
class TrafficClient {
  readonly #client: pg.PoolClient;
  readonly #traffic: DatabaseTraffic;
  readonly #names: StatementNames;
  /** By statement name: the columns of its last answer, their parsers and pg's empty row. */
  readonly #rowShapes = new Map<string, RowShape>();
  /** Statements waiting for the next one. */
  #waiting: Statement[] = [];
  #inTransaction = false;
  /** True while BEGIN itself is still waiting (nothing of the transaction was sent). */
  #beginWaiting = false;

  constructor(client: pg.PoolClient, traffic: DatabaseTraffic, names: StatementNames) {
    this.#client = client;
    this.#traffic = traffic;
    this.#names = names;
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
    this.#inTransaction = false;
    this.#beginWaiting = false;
  }

  #submit({ text, values }: Statement): Promise<QueryResultLike> {
    // Statements without values (BEGIN, COMMIT, SAVEPOINT …) stay on the simple protocol.
    const name = values !== undefined && values.length > 0 ? this.#names.nameOf(text) : undefined;
    return new Promise((resolve, reject) => {
      // Text and values as arguments: given a config object, pg copies it property by property.
      const query = new pg.Query(text, values as unknown[] | undefined, (error, result) =>
        error ? reject(error) : resolve(result as unknown as QueryResultLike),
      );
      if (name !== undefined) {
        (query as unknown as { name: string }).name = name;
        this.#reuseRowShape(query, name);
      }
      this.#client.query(query);
    });
  }

  /**
   * Lets `query` (prepared as `name`) reuse the row shape of the statement's earlier answers:
   * PostgreSQL describes a prepared statement's columns on every execution, and pg builds the
   * columns' parsers and an empty row object from that each time. Reused only while the
   * columns are the same, name for name and type for type.
   */
  #reuseRowShape(query: pg.Query, name: string): void {
    const result = (query as unknown as { _result: ResultInternals })._result;
    const build = result.addFields;
    const shapes = this.#rowShapes;
    result.addFields = function (fields) {
      const known = shapes.get(name);
      if (known !== undefined && sameColumns(known.fields, fields)) {
        this.fields = fields;
        this._parsers = known.parsers;
        this._prebuiltEmptyResultObject = known.empty;
        return;
      }
      build.call(this, fields);
      if (shapes.size >= MAX_NAMED_STATEMENTS * 2) shapes.clear();
      shapes.set(name, { fields, parsers: this._parsers, empty: this._prebuiltEmptyResultObject });
    };
  }

  /**
   * Writes the waiting statements and `last` back to back (pipeline mode: one round trip,
   * one write to the socket), waits for all of them and answers `last`'s result; the first
   * error among them is thrown.
   */
  async #send(last: Statement): Promise<QueryResultLike> {
    if (this.#waiting.length === 0) {
      count(this.#traffic, 1, 1);
      try {
        return await this.#submit(last);
      } catch (error) {
        throw this.#noted(error);
      }
    }
    const statements = [...this.#waiting, last];
    this.#waiting = [];
    this.#beginWaiting = false;
    count(this.#traffic, 1, statements.length);
    const stream = (this.#client as unknown as { connection: { stream: Writable } }).connection.stream;
    stream.cork();
    let answers: Promise<QueryResultLike>[];
    try {
      answers = statements.map((statement) => this.#submit(statement));
    } finally {
      stream.uncork();
    }
    const settled = await Promise.allSettled(answers);
    for (const outcome of settled) if (outcome.status === 'rejected') throw this.#noted(outcome.reason);
    return (settled.at(-1) as PromiseFulfilledResult<QueryResultLike>).value;
  }

  /** `error`, after dropping every statement name when it says a prepared statement is stale. */
  #noted(error: unknown): unknown {
    if (isStalePreparedStatement(error)) this.#names.stale();
    return error;
  }

  /** A statement outside a transaction: sent again, under a fresh name, if its prepared one was stale. */
  async #sendAlone(statement: Statement): Promise<QueryResultLike> {
    try {
      return await this.#send(statement);
    } catch (error) {
      // Refused before it ran (at Bind): nothing happened, so sending it again is safe.
      if (!isStalePreparedStatement(error)) throw error;
      return this.#send(statement);
    }
  }

  async query(text: unknown, values?: readonly unknown[]): Promise<unknown> {
    if (typeof text !== 'string') throw new TypeError('only SQL text with bound values is sent');
    const command = text.trimStart().slice(0, 24).toLowerCase();
    if (isBegin(command) && !this.#inTransaction) {
      this.#inTransaction = true;
      this.#beginWaiting = true;
      this.#waiting = [{ text, values }];
      return answered('BEGIN');
    }
    if (this.#inTransaction && (isSavepointOrRelease(command) || text.startsWith(WITH_NEXT_MARK))) {
      this.#waiting.push({ text, values });
      return answered(command.startsWith('savepoint') ? 'SAVEPOINT' : command.startsWith('release') ? 'RELEASE' : '');
    }
    if (command === 'rollback') {
      const nothingSent = this.#beginWaiting;
      this.#endTransaction();
      // Nothing of the transaction reached the server: there is nothing to roll back.
      if (nothingSent) return answered('ROLLBACK');
      return this.#send({ text, values });
    }
    if (command === 'commit') {
      const empty = this.#beginWaiting && this.#waiting.length === 1;
      const waiting = this.#waiting;
      this.#endTransaction();
      if (empty) return answered('COMMIT');
      this.#waiting = waiting;
      return this.#send({ text, values });
    }
    return this.#inTransaction ? this.#send({ text, values }) : this.#sendAlone({ text, values });
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
 * Wraps `pool` (created with `pipeline: true`) for Kysely: each client counts into `traffic`,
 * saves round trips (see the header) and shows every statement text it writes to
 * `listeners`. One wrapper per pooled client, so Kysely's per-client state stays per client.
 */
export function trafficPool(
  pool: pg.Pool,
  traffic: DatabaseTraffic,
  listeners: ReadonlySet<StatementListener> = new Set(),
): PoolLike {
  const wrappers = new WeakMap<pg.PoolClient, TrafficClient>();
  const names = new StatementNames();
  // Every client of the pool, also those used without Kysely (the commit version's read).
  pool.on('connect', (client) => watchWire(client, listeners));
  return {
    async connect() {
      const client = await pool.connect();
      let wrapper = wrappers.get(client);
      if (!wrapper) {
        wrapper = new TrafficClient(client, traffic, names);
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
 * For db/ only (locks, count deltas, NOTIFY): runs `query` inside `trx` when its answer is not
 * needed. On PostgreSQL inside a transaction it is written in front of the transaction's next
 * statement, values bound (see the header), so an error it raises is thrown there instead
 * (the transaction fails either way). Only for statements whose failure no caller handles on
 * its own. Elsewhere (SQLite, outside a transaction) it simply runs.
 */
export async function sendWithNextStatement(
  trx: Transaction<Database> | Kysely<Database>,
  query: Executable,
): Promise<void> {
  const compiled = query.compile(trx as Kysely<Database>);
  if (!isPostgres(trx) || !trx.isTransaction) {
    await trx.executeQuery(compiled);
    return;
  }
  await trx.executeQuery({ ...compiled, sql: WITH_NEXT_MARK + compiled.sql });
}
