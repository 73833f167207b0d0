// The customer portal's links and browser sessions (SPEC §16), the only writer of
// `portal_sessions` and `portal_logins`. A link (POST /api/customers/{id}/portal-sessions) is
// a random token for ONE customer, valid PORTAL_SESSION_TTL_MS; opening it mints another
// random token, the browser session's cookie, which lives as long as the link. Only SHA-256
// hashes of both are stored, and every page looks its customer up through the cookie's row:
// a session never names another customer. The CSRF token of a session's forms is derived from
// its cookie token (csrfTokenOf), so no other site can compute it.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Database } from '../../db/database.ts';
import { ValidationError } from '../../http/errors.ts';
import type { Clock } from '../../shared/clock.ts';
import { newId } from '../../shared/ids.ts';
import { getCustomer } from '../customers/customers.service.ts';
import type { PortalSession, PortalSessionInput } from './portal-sessions.schemas.ts';
import { isHttpUrl } from '../../shared/urls.ts';

/** How long a portal link, and every session it starts, is valid (ms): one hour (SPEC §16). */
export const PORTAL_SESSION_TTL_MS = 60 * 60_000;

/** The path under PUBLIC_URL that opens a link: `<PUBLIC_URL>/portal/open/<token>`. */
export const PORTAL_OPEN_PATH = '/portal/open/';

/** 32 random bytes, base64url (43 characters): a link or cookie token. */
const TOKEN_SHAPE = /^[A-Za-z0-9_-]{43}$/;

function newToken(): string {
  return randomBytes(32).toString('base64url');
}

function hashOf(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

/**
 * Makes a portal link for live customer `customerId` (SPEC §16), valid PORTAL_SESSION_TTL_MS
 * from `clock`'s now; `publicUrl` (PUBLIC_URL) is the link's origin. Returns `{id, url,
 * expires_at (ISO 8601), return_url (normalized by the WHATWG URL parser)}`; the token in `url` is shown only here. Throws 404
 * `not_found` for an unknown, deleted or malformed customer, 400 `validation_error` when
 * `return_url` is not an absolute http(s) URL without credentials.
 */
export async function createPortalSession(
  db: Kysely<Database>,
  clock: Clock,
  publicUrl: string,
  customerId: string,
  input: PortalSessionInput,
): Promise<PortalSession> {
  const given = input.return_url ?? null;
  if (given !== null && !isHttpUrl(given)) {
    throw new ValidationError('return_url must be an absolute http:// or https:// URL', 'return_url');
  }
  // Kept as the URL parser serializes it: quotes and angle brackets percent-encoded.
  const returnUrl = given === null ? null : new URL(given).href;
  await getCustomer(db, customerId);
  const token = newToken();
  const now = clock.now();
  const row = {
    id: newId('portalSession'),
    customer_id: customerId,
    token_hash: hashOf(token),
    return_url: returnUrl,
    created_at: now.toISOString(),
    expires_at: new Date(now.getTime() + PORTAL_SESSION_TTL_MS).toISOString(),
  };
  await db.insertInto('portal_sessions').values(row).execute();
  return {
    id: row.id,
    url: `${publicUrl}${PORTAL_OPEN_PATH}${token}`,
    expires_at: row.expires_at,
    return_url: returnUrl,
  };
}

/** A browser session of the portal: whose it is, until when, and where "Back" leads. */
export interface PortalLogin {
  customerId: string;
  /** ISO 8601. */
  expiresAt: string;
  returnUrl: string | null;
}

/** What a link or a cookie comes to: a live session, one that expired (its return_url), or nothing known. */
export type PortalLookup =
  | { kind: 'live'; login: PortalLogin; token: string }
  | { kind: 'expired'; returnUrl: string | null }
  | { kind: 'unknown' };

/**
 * Opens the link whose token is `linkToken` at `clock`'s now: a new browser session (its
 * cookie token in `token`, shown only here) for the link's customer, expiring with the link.
 * `expired` once the link's hour is over, `unknown` for a token that was never issued or is
 * malformed. Throws only on database failure.
 */
export async function openPortalSession(db: Kysely<Database>, clock: Clock, linkToken: string): Promise<PortalLookup> {
  if (!TOKEN_SHAPE.test(linkToken)) return { kind: 'unknown' };
  const link = await db
    .selectFrom('portal_sessions')
    .selectAll()
    .where('token_hash', '=', hashOf(linkToken))
    .executeTakeFirst();
  if (!link) return { kind: 'unknown' };
  const now = clock.now();
  if (new Date(link.expires_at).getTime() <= now.getTime()) return { kind: 'expired', returnUrl: link.return_url };
  const token = newToken();
  const expiresAt = new Date(link.expires_at).toISOString();
  await db
    .insertInto('portal_logins')
    .values({
      token_hash: hashOf(token),
      portal_session_id: link.id,
      customer_id: link.customer_id,
      created_at: now.toISOString(),
      expires_at: expiresAt,
    })
    .execute();
  return { kind: 'live', token, login: { customerId: link.customer_id, expiresAt, returnUrl: link.return_url } };
}

/**
 * The browser session whose cookie token is `cookieToken`, at `clock`'s now: `live` (its
 * customer, expiry and return_url), `expired`, or `unknown` (never issued, malformed, absent).
 */
export async function findPortalLogin(
  db: Kysely<Database>,
  clock: Clock,
  cookieToken: string | undefined,
): Promise<PortalLookup> {
  if (cookieToken === undefined || !TOKEN_SHAPE.test(cookieToken)) return { kind: 'unknown' };
  const row = await db
    .selectFrom('portal_logins')
    .innerJoin('portal_sessions', 'portal_sessions.id', 'portal_logins.portal_session_id')
    .select(['portal_logins.customer_id', 'portal_logins.expires_at', 'portal_sessions.return_url'])
    .where('portal_logins.token_hash', '=', hashOf(cookieToken))
    .executeTakeFirst();
  if (!row) return { kind: 'unknown' };
  if (new Date(row.expires_at).getTime() <= clock.now().getTime())
    return { kind: 'expired', returnUrl: row.return_url };
  return {
    kind: 'live',
    token: cookieToken,
    login: {
      customerId: row.customer_id,
      expiresAt: new Date(row.expires_at).toISOString(),
      returnUrl: row.return_url,
    },
  };
}

/**
 * The CSRF token of the session whose cookie token is `cookieToken` (base64url SHA-256 of a
 * label and the token): in every form of its pages, checked on every POST (csrfTokenMatches).
 * Another site can neither read the cookie nor the page, so it cannot post a valid one.
 */
export function csrfTokenOf(cookieToken: string): string {
  return createHash('sha256').update('portal-csrf\0').update(cookieToken).digest('base64url');
}

/** True when `given` (a form field, maybe absent) is the CSRF token of `cookieToken`, compared in constant time. */
export function csrfTokenMatches(cookieToken: string, given: unknown): boolean {
  if (typeof given !== 'string') return false;
  const expected = Buffer.from(csrfTokenOf(cookieToken));
  const actual = Buffer.from(given);
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}
