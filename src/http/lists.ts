// The one implementation of SPEC §2 "Lists": page/limit/sort_by/sort_order parsing,
// whitelisted sort fields, id tie-break, and the two envelopes.
import type { SelectQueryBuilder } from 'kysely';

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
}

export interface ListQueryInput {
  page?: string;
  limit?: string;
  sort_by?: string;
  sort_order?: 'asc' | 'desc';
}

/**
 * Query-string schema for a list: the four list parameters plus `filters`. `sort_by` is
 * limited to `sortFields` and `sort_order` to asc|desc, so other values get a 400.
 * `page` and `limit` are lenient strings: bad values fall back to their defaults.
 */
export function listQuerySchema(sortFields: readonly string[], filters: Record<string, object> = {}) {
  return {
    type: 'object',
    properties: {
      page: { type: 'string', description: 'Zero-based page (default 0; negative or not a number → 0).' },
      limit: {
        type: 'string',
        description: `Items per page (default ${DEFAULT_LIMIT}, max ${MAX_LIMIT}; invalid → ${DEFAULT_LIMIT}).`,
      },
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

/** Orders by the sort field then by id (the tie-break), and cuts the page. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- works for any table with an `id` column
export function pageOf<QB extends SelectQueryBuilder<any, any, any>>(query: QB, params: ListParams): QB {
  return query
    .orderBy(params.sortBy, params.sortOrder)
    .orderBy('id', params.sortOrder)
    .limit(params.limit)
    .offset(params.offset) as QB;
}

export interface Page<T> {
  data: T[];
  meta: { total: number; page: number; limit: number };
}

/** The standard list envelope `{data, meta: {total, page, limit}}`. */
export function pageEnvelope<T>(data: T[], total: number, params: ListParams): Page<T> {
  return { data, meta: { total, page: params.page, limit: params.limit } };
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

/**
 * How many rows a list's filtered query matches (`query` is the `selectFrom` with its
 * `where`s, before any select). For unfiltered big lists use the kept count (db/counts.ts).
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- works for any table
export async function countMatching(query: SelectQueryBuilder<any, any, object>): Promise<number> {
  const row = await query.select((eb) => eb.fn.countAll<number>().as('total')).executeTakeFirstOrThrow();
  return Number((row as { total: number | string }).total);
}
