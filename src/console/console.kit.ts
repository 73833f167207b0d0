// What the console's page files share (SPEC §16): the form readers, links, keyset cursors,
// and ConsoleKit — the page, message and action helpers registerConsole builds once per app
// and hands to each group of pages.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError, ValidationError } from '../http/errors.ts';
import { keysetParams, type ListParams, type Page, parseListParams } from '../http/lists.ts';
import type { ConsoleSession } from '../modules/console-sessions/console-sessions.service.ts';

/** Where the console lives. */
export const CONSOLE_PREFIX = '/console';
/** Rows per console list page. */
export const PAGE_SIZE = 25;

/** A posted form (or a query string) as field → text. */
export type Form = Record<string, string>;
/** Route generics of a page with one id in its path. */
export type IdParams = { Params: { id: string } };

/** An id path parameter the pages accept: printable, ≤ 64 characters (the services answer 404 otherwise). */
export function checkedId(id: string): string {
  // eslint-disable-next-line no-control-regex -- control characters are what is refused
  if (id.length > 64 || /[\u0000-\u001f]/.test(id)) throw new AppError('not_found', 'no such page');
  return id;
}

/** A form's whole-number field: undefined when empty; 400 unless digits only within `min` … max. */
export function wholeNumber(form: Form, field: string, max: number, min = 1): number | undefined {
  const text = (form[field] ?? '').trim();
  if (text === '') return undefined;
  const value = /^\d{1,16}$/.test(text) ? Number(text) : NaN;
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw new ValidationError(`${field} must be a whole number from ${min} to ${max}`, field);
  }
  return value;
}

/** A form's optional text field: undefined when empty; 400 when longer than `max` or holding NUL. */
export function optionalText(form: Form, field: string, max: number): string | undefined {
  const text = (form[field] ?? '').trim();
  if (text === '') return undefined;
  if ([...text].length > max || text.includes('\u0000')) {
    throw new ValidationError(`${field} must be at most ${max} characters, without NUL`, field);
  }
  return text;
}

/** `path?query` with the defined, non-empty `params`. */
export function linkTo(path: string, params: Record<string, string | number | undefined>): string {
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(params))
    if (value !== undefined && value !== '') query.set(key, String(value));
  const text = query.toString();
  return text === '' ? path : `${path}?${text}`;
}

/** The cursor after a row: its sort value and id, JSON then base64url (opaque to the browser). */
export function encodeCursor(value: string | number, id: string): string {
  return Buffer.from(JSON.stringify([value, id])).toString('base64url');
}

/** A cursor read back, or undefined when it is not one of ours (then the first page is shown). */
export function decodeCursor(cursor: unknown): [string | number, string] | undefined {
  if (typeof cursor !== 'string' || cursor.length > 2048) return undefined;
  try {
    const value: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (
      Array.isArray(value) &&
      value.length === 2 &&
      (typeof value[0] === 'string' || (typeof value[0] === 'number' && Number.isFinite(value[0]))) &&
      typeof value[1] === 'string'
    ) {
      return [value[0] as string | number, value[1] as string];
    }
  } catch {
    // Not JSON: a hand-edited cursor starts over.
  }
  return undefined;
}

/** An ISO 8601 instant as the lists store and show them. */
const ISO_INSTANT = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,6})?Z$/;
/** An id as the service makes them (`cus_…`, `whd_…`). */
const ID = /^[a-z]{2,8}_[0-9A-Za-z]{1,64}$/;

/**
 * A cursor of a list sorted by a timestamp, or undefined (the first page) unless it holds an
 * ISO instant and an id: a forged value never reaches the database (PostgreSQL would refuse
 * it as a timestamp, a 500 for the client's mistake).
 */
function timestampCursor(cursor: unknown): [string, string] | undefined {
  const value = decodeCursor(cursor);
  if (value === undefined) return undefined;
  const [key, id] = value;
  return typeof key === 'string' && ISO_INSTANT.test(key) && !Number.isNaN(Date.parse(key)) && ID.test(id)
    ? [key, id]
    : undefined;
}

/** A keyset page of a console list: its rows and the cursor of the next page (undefined on the last). */
export interface KeysetPage<T> {
  data: T[];
  next: string | undefined;
}

/**
 * One keyset page (PAGE_SIZE rows, newest `sortBy` — a timestamp field — first) of a service's list function
 * `load`: asks it for one row more than a page after the cursor `after` (ListParams.keyset:
 * no offset, no count), and makes the next cursor from the last row's `sortBy` field and id.
 * Throws (a 500, logged) when the rows lack `sortBy`: a programming error, never the client's.
 */
export async function keysetPage<T extends { id: string }>(
  load: (params: ListParams) => Promise<Page<T>>,
  sortBy: string,
  after: unknown,
): Promise<KeysetPage<T>> {
  const params = keysetParams(parseListParams({ limit: String(PAGE_SIZE + 1) }, sortBy), timestampCursor(after));
  const rows = (await load(params)).data;
  const data = rows.slice(0, PAGE_SIZE);
  const last = data.at(-1);
  if (rows.length <= PAGE_SIZE || last === undefined) return { data, next: undefined };
  const value = (last as unknown as Record<string, unknown>)[sortBy];
  // A list whose rows lack their sort field would end silently after one page: fail loudly.
  if (typeof value !== 'string' && typeof value !== 'number') throw new Error(`keyset list rows lack ${sortBy}`);
  const next = encodeCursor(value, last.id);
  return { data, next };
}

/** What registerConsole hands each group of pages. */
export interface ConsoleKit {
  /** The signed-in session of `request` (set by the preHandler). */
  sessionOf(request: FastifyRequest): ConsoleSession;
  /** Answers template `name` as a 200 page titled `title`. */
  page(request: FastifyRequest, reply: FastifyReply, name: string, title: string, data?: object): FastifyReply;
  /** Answers a message page (`status`) with a heading, a text and an optional link back. */
  message(
    request: FastifyRequest,
    reply: FastifyReply,
    status: number,
    heading: string,
    text: string,
    back?: string,
  ): FastifyReply;
  /**
   * Runs a console action as its session (events carry `actor`), records it in
   * console_actions, and answers 303 to `then` with `notice` (a NOTICES key); a refusal (4xx)
   * is recorded and shown with a link back.
   */
  act(
    request: FastifyRequest,
    reply: FastifyReply,
    action: string,
    targetId: string,
    then: string,
    notice: string,
    run: (session: ConsoleSession) => Promise<unknown>,
  ): Promise<FastifyReply>;
}
