// The console's cookie and CSRF rules (SPEC §16): the session cookie is HttpOnly,
// SameSite=Strict, scoped to /console, and Secure when the request came over HTTPS or
// PUBLIC_URL is https (TLS ended by a proxy in front). Every POST carries the session's CSRF
// token in a hidden `_csrf` field; a missing or wrong one is refused before anything runs.
import { timingSafeEqual } from 'node:crypto';
import { parseCookie, stringifySetCookie } from 'cookie';
import type { FastifyRequest } from 'fastify';

/** The session cookie's name. */
export const SESSION_COOKIE = 'billing_console';
/** The path the cookie is sent to: the console only, never the API or the hosted pages. */
const COOKIE_PATH = '/console';

/** The session token the request's cookie carries, or undefined. */
export function sessionTokenOf(request: FastifyRequest): string | undefined {
  const header = request.headers.cookie;
  if (typeof header !== 'string' || header.length > 8192) return undefined;
  return parseCookie(header)[SESSION_COOKIE];
}

/** True when the cookie must be Secure: an HTTPS request, or a PUBLIC_URL behind TLS. */
function secureFor(request: FastifyRequest, publicUrl: string): boolean {
  return request.protocol === 'https' || publicUrl.startsWith('https://');
}

/** The Set-Cookie value that starts a session with `token` (a browser-session cookie). */
export function sessionCookie(request: FastifyRequest, publicUrl: string, token: string): string {
  return stringifySetCookie({
    name: SESSION_COOKIE,
    value: token,
    httpOnly: true,
    sameSite: 'strict',
    secure: secureFor(request, publicUrl),
    path: COOKIE_PATH,
  });
}

/** The Set-Cookie value that removes the session cookie (sign out, a dead session). */
export function clearedSessionCookie(request: FastifyRequest, publicUrl: string): string {
  return stringifySetCookie({
    name: SESSION_COOKIE,
    value: '',
    httpOnly: true,
    sameSite: 'strict',
    secure: secureFor(request, publicUrl),
    path: COOKIE_PATH,
    expires: new Date(0),
  });
}

/** True when `given` (a form's `_csrf`) is the session's token, compared in constant time. */
export function csrfMatches(given: unknown, expected: string): boolean {
  if (typeof given !== 'string') return false;
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}
