// The one implementation of SPEC §2 "Lists": page/limit/sort_by/sort_order parsing,
// whitelisted sort fields, filters, id tie-break, the total, and the two envelopes. Every
// list of the API is one defineList definition at module level and its `page` per request.
import type { Kysely, SelectQueryBuilder } from 'kysely';
import { compiledQueries, type Param } from '../db/compiled-queries.ts';
import { type CountName, keptTotalExpression } from '../db/counts.ts';
import type { Database } from '../db/database.ts';

export const DEFAULT_LIMIT = 10;
export const MAX_LIMIT = 100;
const MAX_PAGE = 1_000_000_000;

export interface ListParams {
  /** Zero-based page. */
  page: number;
  /** Items per page, 1–100. */
  limit: number;
  offset: number;
  sortBy: string;
  sortOrder: 'asc' | 'desc';
  /**
   * A keyset page instead of an offset one (the operator console's lists, SPEC §16): the rows
   * after `after` — the sort value and id of the previous page's last row — in the sort
   * order, `offset` ignored, and no total read (`meta.total` is -1). Undefined: offset pages.
   */
  keyset?: { after: readonly [sortValue: string | number, id: string] | undefined };
}

/** `params` as a keyset page (ListParams.keyset) after `after`, or the first one. */
export function keysetParams(params: ListParams, after: readonly [string | number, string] | undefined): ListParams {
  return { ...params, page: 0, offset: 0, keyset: { after } };
}

export interface ListQueryInput {
  page?: string;
  limit?: string;
  sort_by?: string;
  sort_order?: 'asc' | 'desc';
}

/**
 * `page` and `limit` as /openapi.json documents them: integers (what a client sends). The
 * route validates them as lenient strings instead (listQuerySchema: bad values fall back to
 * their defaults, SPEC §2), so http/openapi.ts publishes these in their place.
 */
export const LIST_PAGING_DOCUMENTATION = {
  page: {
    type: 'integer',
    minimum: 0,
    default: 0,
    description: 'Zero-based page (default 0; negative or not a number → 0).',
    examples: [0],
  },
  limit: {
    type: 'integer',
    minimum: 1,
    maximum: MAX_LIMIT,
    default: DEFAULT_LIMIT,
    description: `Items per page (default ${DEFAULT_LIMIT}, max ${MAX_LIMIT}; invalid → ${DEFAULT_LIMIT}, above ${MAX_LIMIT} → ${MAX_LIMIT}).`,
    examples: [DEFAULT_LIMIT],
  },
} as const;

/**
 * Query-string schema for a list: the four list parameters plus `filters`. `sort_by` is
 * limited to `sortFields` and `sort_order` to asc|desc, so other values get a 400.
 * `page` and `limit` are validated as lenient strings (bad values fall back to their
 * defaults) and documented as integers (LIST_PAGING_DOCUMENTATION).
 */
export function listQuerySchema(sortFields: readonly string[], filters: Record<string, object> = {}) {
  return {
    type: 'object',
    properties: {
      page: { type: 'string', description: LIST_PAGING_DOCUMENTATION.page.description },
      limit: { type: 'string', description: LIST_PAGING_DOCUMENTATION.limit.description },
      sort_by: { type: 'string', enum: [...sortFields], default: 'created_at' },
      sort_order: { type: 'string', enum: ['asc', 'desc'], default: 'desc' },
      ...filters,
    },
  } as const;
}

function wholeNumber(text: string | undefined): number | undefined {
  if (text === undefined || !/^\s*[-+]?\d+\s*$/.test(text)) return undefined;
  return Number(text);
}

/** Applies SPEC §2's defaults and clamps to validated list query values. */
export function parseListParams(query: ListQueryInput, defaultSort = 'created_at'): ListParams {
  const page = Math.min(Math.max(wholeNumber(query.page) ?? 0, 0), MAX_PAGE);
  const requested = wholeNumber(query.limit);
  const limit = requested === undefined || requested < 1 ? DEFAULT_LIMIT : Math.min(requested, MAX_LIMIT);
  return {
    page,
    limit,
    offset: page * limit,
    sortBy: query.sort_by ?? defaultSort,
    sortOrder: query.sort_order ?? 'desc',
  };
}

export interface Page<T> {
  data: T[];
  meta: { total: number; page: number; limit: number };
}

/** A dunning list `{data, total}` (SPEC §2: no `meta`). */
export interface SimpleList<T> {
  data: T[];
  total: number;
}

/** The dunning envelope of a page: its items and the total, without `meta`. */
export function simpleListOf<T>(page: Page<T>): SimpleList<T> {
  return { data: page.data, total: page.meta.total };
}

/** Response schema of a standard list of `item`. */
export function pageSchema(item: object) {
  return {
    type: 'object',
    required: ['data', 'meta'],
    properties: {
      data: { type: 'array', items: item },
      meta: {
        type: 'object',
        required: ['total', 'page', 'limit'],
        properties: { total: { type: 'integer' }, page: { type: 'integer' }, limit: { type: 'integer' } },
      },
    },
  } as const;
}

/** Response schema of a dunning list `{data, total}` (no meta, SPEC §2). */
export function simpleListSchema(item: object) {
  return {
    type: 'object',
    required: ['data', 'total'],
    properties: { data: { type: 'array', items: item }, total: { type: 'integer' } },
  } as const;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- works for any table
type BaseQuery = SelectQueryBuilder<any, any, object>;

/**
 * A list filter's value: a scalar keeps rows whose column equals it; `{ isNull }` keeps rows
 * whose column is (or is not) null; `undefined` means the client did not filter on it.
 */
export type FilterValue = string | number | { isNull: boolean } | undefined;

/** One list's definition for defineList: everything but the request's values. */
export interface ListDefinition<P extends object, Q extends BaseQuery, R, T> {
  /**
   * The rows the list is over: `selectFrom` plus any condition that always holds, before any
   * select. Built once per database: a value that changes per request (one endpoint's
   * deliveries) must be `param(name)`, given as `values` to `page`.
   */
  from: (db: Kysely<Database>, param: Param<P>) => Q;
  /** Selects the row columns: only those the response needs (`(q) => q.select([...])`). */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- any table's rows
  select: (query: Q) => SelectQueryBuilder<any, any, R>;
  /** The columns `sort_by` may name (the route's `listQuerySchema` whitelist); the first is the fallback. */
  sortable: readonly string[];
  /**
   * The kept total of `from`'s rows (db/counts.ts), read in the page's own statement when no
   * filter is set; without it every total is counted.
   */
  keptTotal?: CountName;
  /** Qualifies the sort and tie-break columns (`subscriptions` → `subscriptions.id`) when `select` joins. */
  table?: string;
  /**
   * Turns the page's rows into the response items (rows may carry an extra `list_total`
   * column: ignore it). Synchronous: a list that needs more reads per item (a delivery's
   * attempts) makes them after `page`.
   */
  map: (rows: R[]) => T[];
}

/** A list compiled once per shape (see defineList). */
export interface CompiledList<P extends object, T> {
  /**
   * One page (SPEC §2 "Lists") as `{data, meta: {total, page, limit}}`: `filters` are column →
   * value (undefined = not filtered, see FilterValue), `values` the `param`s of the
   * definition's `from`.
   */
  page(db: Kysely<Database>, params: ListParams, filters?: Record<string, FilterValue>, values?: P): Promise<Page<T>>;
}

/** The structure of one page query: everything but its values. */
interface ListShape {
  sortBy: string;
  sortOrder: 'asc' | 'desc';
  /** Set filters in column order: a scalar (`=`, a parameter) or `{ isNull }` (structure). */
  filters: [column: string, value: Exclude<FilterValue, undefined>][];
  /** The page statement also reads the kept total (`list_total`). */
  withKeptTotal: boolean;
  /** A keyset page (ListParams.keyset): the first one, or one after a cursor. */
  keyset: 'first' | 'after' | undefined;
}

const TOTAL_COLUMN = 'list_total';

function shapeKey(shape: ListShape): string {
  const filters = shape.filters.map(([column, value]) =>
    typeof value === 'object' ? `${column}${value.isNull ? ' is null' : ' is not null'}` : `${column}=`,
  );
  return `${shape.sortBy} ${shape.sortOrder}|${filters.join(',')}|${shape.withKeptTotal ? 'kept' : ''}|${shape.keyset ?? ''}`;
}

/** `query` with the shape's filters: a scalar one compares with the parameter `filter:<column>`. */
function withFilters(query: BaseQuery, shape: ListShape, param: Param<Record<string, unknown>>): BaseQuery {
  let filtered = query;
  for (const [column, value] of shape.filters) {
    filtered =
      typeof value === 'object'
        ? filtered.where(column, value.isNull ? 'is' : 'is not', null)
        : filtered.where(column, '=', param(`filter:${column}`));
  }
  return filtered;
}

/**
 * A list (SPEC §2 "Lists"): `page` applies the set filters (a scalar keeps rows whose column
 * equals it, `{ isNull }` tests for null), orders by `params.sortBy` (or `sortable[0]` when
 * not whitelisted) then by `id` the same way (the tie-break, so pages never overlap), cuts
 * `limit` rows at `offset` (or, for a keyset page, after the cursor, with no total), and reads the total: the kept counter when one is named and no
 * filter is set, else a count of the filtered rows. Its statements are built and compiled
 * once per shape — sort field and direction, the set of filters present — and database,
 * then run with each request's values (db/compiled-queries.ts). Without a filter the page
 * and the kept total are ONE statement (the total a scalar subquery beside the rows); only
 * a page past the end (no rows) reads the total on its own. With a filter, the page and the
 * count are two statements run side by side. Call at module level: the compiled shapes live
 * as long as the definition.
 */
export function defineList<P extends object, Q extends BaseQuery, R, T>(
  definition: ListDefinition<P, Q, R, T>,
): CompiledList<P, T> {
  const { table } = definition;
  const column = (name: string) => (table === undefined ? name : `${table}.${name}`);
  type Values = Record<string, unknown>;
  const pages = compiledQueries(shapeKey, (db, param: Param<Values>, shape: ListShape) => {
    const from = definition.from(db, param as unknown as Param<P>);
    let query = definition.select(withFilters(from, shape, param) as Q) as unknown as BaseQuery;
    if (shape.withKeptTotal) query = query.select(keptTotalExpression(db, definition.keptTotal!).as(TOTAL_COLUMN));
    if (shape.keyset === 'after') {
      // The rows past the cursor in the sort order: one range read of the (sort field, id) index.
      query = query.where((eb) =>
        eb(
          eb.refTuple(column(shape.sortBy) as never, column('id') as never),
          shape.sortOrder === 'desc' ? '<' : '>',
          eb.tuple(param('after:key') as never, param('after:id') as never),
        ),
      );
    }
    const ordered = query
      .orderBy(column(shape.sortBy), shape.sortOrder)
      .orderBy(column('id'), shape.sortOrder)
      .limit(param('limit') as number);
    return shape.keyset === undefined ? ordered.offset(param('offset') as number) : ordered;
  });
  const totals = compiledQueries(shapeKey, (db, param: Param<Values>, shape: ListShape) =>
    shape.withKeptTotal
      ? db.selectNoFrom(keptTotalExpression(db, definition.keptTotal!).as('total'))
      : withFilters(definition.from(db, param as unknown as Param<P>), shape, param).select((eb) =>
          eb.fn.countAll<number>().as('total'),
        ),
  );
  const totalOf = (rows: unknown[]) => Number((rows[0] as { total?: number | string } | undefined)?.total ?? 0);
  const assemble = (rows: R[], total: number, params: ListParams): Page<T> => ({
    data: definition.map(rows),
    meta: { total, page: params.page, limit: params.limit },
  });
  return {
    async page(db, params, filters = {}, values) {
      const set: ListShape['filters'] = [];
      const after = params.keyset?.after;
      const bound: Values = { ...values, limit: params.limit, offset: params.offset };
      if (after !== undefined) Object.assign(bound, { 'after:key': after[0], 'after:id': after[1] });
      for (const name of Object.keys(filters).sort()) {
        const value = filters[name];
        if (value === undefined) continue;
        set.push([name, value]);
        if (typeof value !== 'object') bound[`filter:${name}`] = value;
      }
      const sortBy = definition.sortable.includes(params.sortBy) ? params.sortBy : definition.sortable[0]!;
      const shape: ListShape = {
        sortBy,
        sortOrder: params.sortOrder,
        filters: set,
        withKeptTotal: params.keyset === undefined && definition.keptTotal !== undefined && set.length === 0,
        keyset: params.keyset === undefined ? undefined : after === undefined ? 'first' : 'after',
      };
      const pageQuery = pages.get(shape);
      // A keyset page reads no total: counting is what it exists to avoid at 1 M rows.
      if (shape.keyset !== undefined) return assemble((await pageQuery.executeRead(db, bound)) as R[], -1, params);
      if (!shape.withKeptTotal) {
        const [rows, total] = await Promise.all([
          pageQuery.executeRead(db, bound) as Promise<R[]>,
          totals.get(shape).executeRead(db, bound),
        ]);
        return assemble(rows, totalOf(total), params);
      }
      // The page's statement read the kept total too; only a page past the end reads it apart.
      const rows = (await pageQuery.executeRead(db, bound)) as R[];
      const first = rows[0] as Record<string, unknown> | undefined;
      if (first !== undefined) return assemble(rows, Number(first[TOTAL_COLUMN]), params);
      return assemble(rows, totalOf(await totals.get(shape).executeRead(db, bound)), params);
    },
  };
}
