// Batch-sized statements whose SQL text does not depend on the batch's size. Kysely writes a
// multi-row insert or an `in (…)` list with one placeholder per value, so every batch size is
// a new text: SQLite prepares it again (its statement cache churns) and PostgreSQL plans it
// again, and Kysely parses and compiles every value. The billing run writes thousands of rows
// a second this way (docs/performance.md "The billing run").
import { CompiledQuery, type Insertable, type Kysely, type RawBuilder, type SqlBool, sql } from 'kysely';
import { isPostgres } from './column-types.ts';
import type { Database } from './database.ts';

/**
 * Rows per multi-row insert on SQLite, largest first: a batch of any size is sent as a few
 * statements of these fixed shapes, so each shape's text is built and prepared once.
 */
const SQLITE_ROW_SHAPES = [64, 16, 4, 1] as const;

/** Rows per insert on PostgreSQL (Kysely's builder; far below its 65,535 bound values). */
const POSTGRES_ROWS_PER_INSERT = 500;

/** A multi-row statement: `head (?, …), (?, …) tail`, `width` placeholders a row. */
export interface MultiRowStatement {
  head: string;
  width: number;
  tail: string;
}

const multiRowTexts = new Map<string, string>();

/** `head (?, …), (?, …) tail` for `rows` rows, built once per statement and shape. */
function multiRowText(statement: MultiRowStatement, rows: number): string {
  const key = `${statement.head}\u0000${statement.tail}\u0000${rows}`;
  let text = multiRowTexts.get(key);
  if (text === undefined) {
    const row = `(${Array.from({ length: statement.width }, () => '?').join(', ')})`;
    text = `${statement.head}${Array.from({ length: rows }, () => row).join(', ')}${statement.tail}`;
    multiRowTexts.set(key, text);
  }
  return text;
}

/**
 * SQLite: runs `statement` over `rows` (each `statement.width` values, bound as parameters)
 * in the fixed shapes of SQLITE_ROW_SHAPES, without Kysely's builder; returns the rows the
 * statements return (a `returning` tail), in order. Errors: the database's (constraints).
 */
export async function runMultiRowSqlite<R>(
  db: Kysely<Database>,
  statement: MultiRowStatement,
  rows: readonly (readonly unknown[])[],
): Promise<R[]> {
  const out: R[] = [];
  let at = 0;
  for (const size of SQLITE_ROW_SHAPES) {
    while (rows.length - at >= size) {
      const parameters: unknown[] = [];
      for (let i = at; i < at + size; i++) for (const value of rows[i]!) parameters.push(value);
      const result = await db.executeQuery<R>(CompiledQuery.raw(multiRowText(statement, size), parameters));
      for (const row of result.rows) out.push(row);
      at += size;
    }
  }
  return out;
}

/**
 * Inserts `rows` into `table` (every row with the same columns, those of the first row):
 * on SQLite in fixed-shape multi-row statements (runMultiRowSqlite), on PostgreSQL through
 * Kysely in inserts of up to 500 rows. The same rows either way; no RETURNING. Errors: the
 * database's (a unique or foreign key violation rolls the caller's transaction back).
 */
export async function insertRows<T extends keyof Database & string>(
  db: Kysely<Database>,
  table: T,
  rows: readonly Insertable<Database[T]>[],
): Promise<void> {
  if (rows.length === 0) return;
  const columns = Object.keys(rows[0]!);
  // Names from the code's own row objects, never a client's: still, only plain identifiers.
  for (const column of columns)
    if (!/^[a-z_][a-z0-9_]*$/.test(column)) throw new Error(`insertRows: bad column ${column}`);
  if (isPostgres(db)) {
    for (let i = 0; i < rows.length; i += POSTGRES_ROWS_PER_INSERT) {
      await db
        .insertInto(table)
        // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the generic table's insert type
        .values(rows.slice(i, i + POSTGRES_ROWS_PER_INSERT) as any)
        .execute();
    }
    return;
  }
  const statement = {
    head: `insert into "${table}" (${columns.map((column) => `"${column}"`).join(', ')}) values `,
    width: columns.length,
    tail: '',
  };
  await runMultiRowSqlite(
    db,
    statement,
    rows.map((row) => columns.map((column) => (row as Record<string, unknown>)[column] ?? null)),
  );
}

/**
 * `column` is one of the strings `values`, with the list bound as ONE parameter: `column in
 * (select value from json_each(?))` on SQLite (the list's JSON text), `column = any(?::text[])`
 * on PostgreSQL (an array; unlike a subquery, an index serves it inside an OR too). The text
 * is the same for any number of values, so the statement is prepared and planned once; an
 * empty list matches nothing. Usage: `.where(inList(db, 'id', ids))`.
 */
export function inList(db: Kysely<Database>, column: string, values: readonly string[]): RawBuilder<SqlBool> {
  return isPostgres(db)
    ? sql<SqlBool>`${sql.ref(column)} = any(${values}::text[])`
    : sql<SqlBool>`${sql.ref(column)} in (select value from json_each(${JSON.stringify(values)}))`;
}

/**
 * A derived table `alias(columns…)` holding `rows` (each one string or null per column), as
 * a FROM item whose text is the same for any number of rows: on SQLite ONE bound parameter
 * (the rows' JSON, read by `json_each`), on PostgreSQL one text array per column (`unnest`,
 * which keeps the rows' order). Every column is text: cast it where a type is needed. Usage:
 * `sql\`… from ${rowsTable(db, 'v', ['id', 'at'], rows)} where t.id = v.id\``.
 */
export function rowsTable(
  db: Kysely<Database>,
  alias: string,
  columns: readonly string[],
  rows: readonly (readonly (string | null)[])[],
): RawBuilder<unknown> {
  if (isPostgres(db)) {
    const arrays = columns.map((_, k) => sql`${rows.map((row) => row[k] ?? null)}::text[]`);
    return sql`unnest(${sql.join(arrays)}) as ${sql.id(alias)}(${sql.join(columns.map((column) => sql.id(column)))})`;
  }
  const picks = columns.map((column, k) => sql`value ->> ${sql.lit(k)} as ${sql.id(column)}`);
  return sql`(select ${sql.join(picks)} from json_each(${JSON.stringify(rows)})) as ${sql.id(alias)}`;
}
