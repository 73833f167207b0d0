// Operator console sign-in and sessions (SPEC §16, seed §5.6: no API key ever reaches a
// browser). `billing console-login` makes a one-time link (single use, 15 minutes); opening
// it starts a server-side session whose cookie holds a random token. Only SHA-256 hashes of
// link and session tokens are stored: a copy of the database signs nobody in. A session ends
// after CONSOLE_IDLE_TIMEOUT without a request, or when revoked (sign out, console-logout).
// The only writer of console_login_links, console_sessions and console_actions.
import { createHash, randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Database } from '../../db/database.ts';
import type { ConsoleSessionRow } from '../../db/tables/console-sessions.table.ts';
import { transactionWithRetry } from '../../db/transaction.ts';
import type { Clock } from '../../shared/clock.ts';
import { newId } from '../../shared/ids.ts';

/** How long a sign-in link may be opened: 15 minutes (SPEC §16). */
export const LOGIN_LINK_TTL_MS = 15 * 60_000;
/** The path a sign-in link opens (`<PUBLIC_URL>/console/login/<token>`). */
export const LOGIN_PATH = '/console/login/';
/** A session's last_seen_at is rewritten at most this often (not on every page). */
const TOUCH_INTERVAL_MS = 60_000;
/** The shape of every token made here: 32 random bytes, base64url (43 characters). */
const TOKEN_SHAPE = /^[A-Za-z0-9_-]{43}$/;

/** A console session as the console uses it (never its token). */
export interface ConsoleSession {
  id: string;
  readOnly: boolean;
  csrfToken: string;
  createdAt: string;
  lastSeenAt: string;
}

function newToken(): string {
  return randomBytes(32).toString('base64url');
}

/** SHA-256 (hex) of a token: what the tables keep. */
function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

function toSession(row: ConsoleSessionRow): ConsoleSession {
  return {
    id: row.id,
    readOnly: Boolean(row.read_only),
    csrfToken: row.csrf_token,
    createdAt: row.created_at,
    lastSeenAt: row.last_seen_at,
  };
}

/**
 * A new one-time sign-in link: `{token, expires_at}` (ISO 8601, LOGIN_LINK_TTL_MS from
 * `clock`'s now). The token is returned once, here; only its hash is stored. `readOnly`
 * sessions it starts can change nothing.
 */
export async function createLoginLink(
  db: Kysely<Database>,
  clock: Clock,
  options: { readOnly: boolean },
): Promise<{ id: string; token: string; expires_at: string }> {
  const token = newToken();
  const now = clock.now();
  const row = {
    id: newId('consoleLoginLink'),
    token_hash: hashToken(token),
    read_only: options.readOnly,
    expires_at: new Date(now.getTime() + LOGIN_LINK_TTL_MS).toISOString(),
    used_at: null,
    created_at: now.toISOString(),
  };
  await db.insertInto('console_login_links').values(row).execute();
  return { id: row.id, token, expires_at: row.expires_at };
}

/**
 * Opens sign-in link `token`: when it exists, is unused and unexpired, marks it used and
 * starts a session in the same transaction → `{session, token}` (the session token, for the
 * cookie). Otherwise undefined — whether the link was unknown, used or expired is not told.
 * Single use holds under concurrency: the conditional UPDATE claims the link once.
 */
export async function redeemLoginLink(
  db: Kysely<Database>,
  clock: Clock,
  token: string,
): Promise<{ session: ConsoleSession; token: string } | undefined> {
  if (!TOKEN_SHAPE.test(token)) return undefined;
  const now = clock.now().toISOString();
  return transactionWithRetry(db, async (trx) => {
    const link = await trx
      .updateTable('console_login_links')
      .set({ used_at: now })
      .where('token_hash', '=', hashToken(token))
      .where('used_at', 'is', null)
      .where('expires_at', '>', now)
      .returning(['id', 'read_only'])
      .executeTakeFirst();
    if (!link) return undefined;
    const sessionToken = newToken();
    const row = {
      id: newId('consoleSession'),
      token_hash: hashToken(sessionToken),
      csrf_token: newToken(),
      read_only: Boolean(link.read_only),
      login_link_id: link.id,
      created_at: now,
      last_seen_at: now,
      revoked_at: null,
    };
    await trx.insertInto('console_sessions').values(row).execute();
    return { session: toSession(row), token: sessionToken };
  });
}

/**
 * The live session whose cookie token is `token`, or undefined (unknown, revoked, or idle
 * for `idleMs` or more). Notes the request (last_seen_at, at most once a minute).
 */
export async function findLiveSession(
  db: Kysely<Database>,
  clock: Clock,
  token: string,
  idleMs: number,
): Promise<ConsoleSession | undefined> {
  if (!TOKEN_SHAPE.test(token)) return undefined;
  const row = await db
    .selectFrom('console_sessions')
    .selectAll()
    .where('token_hash', '=', hashToken(token))
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  if (!row) return undefined;
  const now = clock.now();
  const lastSeen = new Date(row.last_seen_at).getTime();
  if (now.getTime() - lastSeen >= idleMs) return undefined;
  if (now.getTime() - lastSeen >= TOUCH_INTERVAL_MS) {
    const seen = now.toISOString();
    await db.updateTable('console_sessions').set({ last_seen_at: seen }).where('id', '=', row.id).execute();
    return toSession({ ...row, last_seen_at: seen });
  }
  return toSession(row);
}

/** Ends session `id` at once (sign out). */
export async function revokeSession(db: Kysely<Database>, clock: Clock, id: string): Promise<void> {
  await db
    .updateTable('console_sessions')
    .set({ revoked_at: clock.now().toISOString() })
    .where('id', '=', id)
    .where('revoked_at', 'is', null)
    .execute();
}

/**
 * Ends every live session and voids every unused sign-in link (`billing console-logout --all`).
 * Returns how many sessions were ended.
 */
export async function revokeAllSessions(db: Kysely<Database>, clock: Clock): Promise<number> {
  const now = clock.now().toISOString();
  return transactionWithRetry(db, async (trx) => {
    await trx.updateTable('console_login_links').set({ used_at: now }).where('used_at', 'is', null).execute();
    const result = await trx
      .updateTable('console_sessions')
      .set({ revoked_at: now })
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
    return Number(result.numUpdatedRows);
  });
}

/** One console action for the audit trail. */
export interface ConsoleActionInput {
  sessionId: string;
  /** What was asked, e.g. `invoice.void`. */
  action: string;
  targetId: string | null;
  outcome: 'succeeded' | 'refused';
  /** A refusal's message (the error the operator saw), at most 500 characters kept. */
  detail: string | null;
}

/**
 * Records a console action with its session (SPEC §16): every POST the console runs, done or
 * refused. The events the action emitted carry the same session as `actor`.
 */
export async function recordConsoleAction(db: Kysely<Database>, clock: Clock, input: ConsoleActionInput) {
  await db
    .insertInto('console_actions')
    .values({
      id: newId('consoleAction'),
      session_id: input.sessionId,
      action: input.action,
      target_id: input.targetId,
      outcome: input.outcome,
      detail: input.detail === null ? null : input.detail.slice(0, 500),
      created_at: clock.now().toISOString(),
    })
    .execute();
}

/** The latest `limit` console actions, newest first (the overview's audit trail). */
export async function listRecentConsoleActions(db: Kysely<Database>, limit: number) {
  return db
    .selectFrom('console_actions')
    .selectAll()
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
}
