// Compile-once Kysely queries. Building and compiling a query (the builder's immutable nodes,
// then the compiler's visit of them) costs more per request than a small SQLite read itself
// (a profile of GET /api/customers, docs/performance.md). A query *shape* — everything but its values —
// is the same on every request, so it is built and compiled once per database and then
// executed with new parameter values: the compiled SQL text is identical each time, which
// also lets the SQLite adapter reuse its prepared statement and PostgreSQL its plan.
//
//   const customerById = compiledQuery((db, param: Param<{ id: string }>) =>
//     db.selectFrom('customers').selectAll().where('id', '=', param('id')));
//   const row = await customerById.executeTakeFirst(db, { id });      // Kysely<Database> or a Transaction
//
// `param(name)` returns a placeholder standing for the value given at execution; it may be
// used wherever Kysely binds a value as a parameter (comparisons, values of insert/update,
// limit/offset, `sql` template values). Structure (table and column names, the sort column
// and direction, which filters are present, an `in` list's length) is not a value: shapes
// that vary in structure use `compiledQueries(keyOf, build)`, compiled once per key.
import {
  type Compilable,
  type CompiledQuery,
  createQueryId,
  type DialectAdapter,
  type Kysely,
  type QueryResult,
  type RootOperationNode,
} from 'kysely';
import type { Database } from './database.ts';
import type { SyncSqliteRead } from './sqlite-adapter.ts';

/** Stands for the named parameter while a shape is compiled; replaced by its value per execution. */
class Placeholder {
  readonly name: string;
  constructor(name: string) {
    this.name = name;
  }
}

/**
 * The placeholder factory a shape's builder receives: `param('id')` is typed as the value of
 * `id` in `P`, so the builder type-checks as if it had the value.
 */
export type Param<P> = <K extends keyof P & string>(name: K) => P[K];

/** A compiled shape: its SQL and node once, its parameters as constants or placeholders. */
interface Template {
  sql: string;
  query: RootOperationNode;
  slots: readonly unknown[];
  /** Positions in `slots` holding a Placeholder. */
  holes: readonly number[];
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- any schema's Kysely
type AnyKysely = Kysely<any>;

function compileTemplate<O>(
  db: AnyKysely,
  build: (db: AnyKysely, param: Param<Record<string, unknown>>) => Compilable<O>,
): Template {
  const requested = new Set<string>();
  const param = ((name: string) => {
    requested.add(name);
    return new Placeholder(name);
  }) as Param<Record<string, unknown>>;
  const compiled = build(db, param).compile();
  const holes: number[] = [];
  const bound = new Set<string>();
  compiled.parameters.forEach((value, i) => {
    if (value instanceof Placeholder) {
      holes.push(i);
      bound.add(value.name);
    }
  });
  // A placeholder Kysely wrote into the SQL text (e.g. through sql.lit) instead of binding it
  // would run as "[object Object]": refuse the shape at its first use instead.
  for (const name of requested) {
    if (!bound.has(name))
      throw new Error(`compiled query: parameter "${name}" is not bound as a value in ${compiled.sql}`);
  }
  return { sql: compiled.sql, query: compiled.query, slots: compiled.parameters, holes };
}

function instantiate<O>(template: Template, values: Record<string, unknown>): CompiledQuery<O> {
  let parameters: readonly unknown[] = template.slots;
  if (template.holes.length > 0) {
    const filled = template.slots.slice();
    for (const i of template.holes) {
      const name = (filled[i] as Placeholder).name;
      if (!(name in values)) throw new Error(`compiled query: no value for parameter "${name}"`);
      filled[i] = values[name];
    }
    parameters = filled;
  }
  return { sql: template.sql, query: template.query, parameters, queryId: createQueryId() };
}

/**
 * Where a shape's compiled templates live: one per dialect adapter (each Kysely instance and
 * its transactions share one), so the same shape runs on SQLite and PostgreSQL side by side.
 * A database with Kysely plugins compiles every time: plugins rewrite the query per instance.
 */
class TemplateCache {
  readonly #byAdapter = new WeakMap<DialectAdapter, Template>();

  get<O>(db: AnyKysely, build: (db: AnyKysely, param: Param<Record<string, unknown>>) => Compilable<O>): Template {
    const executor = db.getExecutor();
    if (executor.plugins.length > 0) return compileTemplate(db, build);
    let template = this.#byAdapter.get(executor.adapter);
    if (!template) {
      template = compileTemplate(db, build);
      this.#byAdapter.set(executor.adapter, template);
    }
    return template;
  }
}

async function run<O>(db: AnyKysely, query: CompiledQuery<O>): Promise<QueryResult<O>> {
  return db.executeQuery(query);
}

/** The synchronous read path of each SQLite database (its root Kysely instance), see registerSyncReads. */
const syncReads = new WeakMap<AnyKysely, SyncSqliteRead>();

/**
 * Lets `executeRead` run reads on `db` (a SQLite database's own Kysely instance, not a
 * transaction) through `read`, without Kysely's driver: on SQLite, Kysely's executor, its
 * connection lock and the promises around each query cost more than a small indexed read
 * itself (a profile of GET /api/customers, docs/performance.md). Called by db/connect.ts.
 */
export function registerSyncReads(db: AnyKysely, read: SyncSqliteRead): void {
  syncReads.set(db, read);
}

/** A query shape compiled once per database, executed with new parameter values. */
export interface CompiledShape<P, O, DB = Database> {
  /** The compiled query with `params` bound (for `db.executeQuery`, or to inspect its SQL). */
  compile(db: Kysely<DB>, params: P): CompiledQuery<O>;
  /** Runs the query on `db` (a Kysely instance or a Transaction); resolves to every row. */
  execute(db: Kysely<DB>, params: P): Promise<O[]>;
  /** Runs the query; resolves to its first row, or undefined when there is none. */
  executeTakeFirst(db: Kysely<DB>, params: P): Promise<O | undefined>;
  /** Runs a statement without rows (insert/update/delete); resolves to the rows it changed. */
  executeWrite(db: Kysely<DB>, params: P): Promise<bigint>;
  /**
   * Runs a SELECT; resolves to every row. On a SQLite database with registerSyncReads and no
   * transaction open on its connection the statement runs at once, without Kysely's driver;
   * anywhere else (PostgreSQL, a Transaction, a transaction in progress) it is `execute`.
   * Never for statements that write.
   */
  executeRead(db: Kysely<DB>, params: P): Promise<O[]>;
}

function shapeOf<P, O, DB>(template: (db: AnyKysely) => Template): CompiledShape<P, O, DB> {
  const compile = (db: AnyKysely, params: P) => instantiate<O>(template(db), (params ?? {}) as Record<string, unknown>);
  return {
    compile,
    execute: async (db, params) => (await run(db, compile(db, params))).rows,
    executeTakeFirst: async (db, params) => (await run(db, compile(db, params))).rows[0],
    executeWrite: async (db, params) => (await run(db, compile(db, params))).numAffectedRows ?? 0n,
    executeRead: async (db, params) => {
      const query = compile(db, params);
      const read = syncReads.get(db);
      const rows = read === undefined ? undefined : read(query.sql, query.parameters);
      if (rows !== undefined) return rows as O[];
      return (await run(db, query)).rows;
    },
  };
}

/**
 * One query shape: `build(db, param)` is called once per database (dialect adapter) with a
 * placeholder factory, and its compiled SQL is reused for every execution with the values of
 * `params`. `build` must not read anything but `db` and `param` (it runs once). Throws, at
 * the first execution, when a placeholder does not end up as a bound parameter, and when an
 * execution lacks a value for a parameter of the shape.
 */
export function compiledQuery<P extends object = Record<string, never>, O = unknown, DB = Database>(
  build: (db: Kysely<DB>, param: Param<P>) => Compilable<O>,
): CompiledShape<P, O, DB> {
  const cache = new TemplateCache();
  const builder = build as unknown as (db: AnyKysely, param: Param<Record<string, unknown>>) => Compilable<O>;
  return shapeOf<P, O, DB>((db) => cache.get(db, builder));
}

/**
 * A family of shapes that differ in structure (a list's sort column and direction, the set of
 * filters present): `keyOf(variant)` names the structure, and `build(db, param, variant)` is
 * compiled once per key and database. Variants with the same key must build the same
 * structure; everything that differs between them beyond the key must be a `param`.
 * The number of keys should be small and bounded (e.g. sort fields × 2 × filter subsets).
 */
export function compiledQueries<V, P extends object = Record<string, never>, O = unknown, DB = Database>(
  keyOf: (variant: V) => string,
  build: (db: Kysely<DB>, param: Param<P>, variant: V) => Compilable<O>,
): { get(variant: V): CompiledShape<P, O, DB> } {
  const shapes = new Map<string, CompiledShape<P, O, DB>>();
  return {
    get(variant: V): CompiledShape<P, O, DB> {
      const key = keyOf(variant);
      let shape = shapes.get(key);
      if (!shape) {
        shape = compiledQuery<P, O, DB>((db, param) => build(db, param, variant));
        shapes.set(key, shape);
      }
      return shape;
    },
  };
}
