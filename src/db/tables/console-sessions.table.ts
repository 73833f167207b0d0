// Row shapes of the operator console's tables (SPEC §16), written only by
// modules/console-sessions/. Tokens are kept as SHA-256 hashes (hex), never as given.
import type { Selectable } from 'kysely';

export interface ConsoleLoginLinksTable {
  id: string;
  token_hash: string;
  /** SQLite stores booleans as 0/1. */
  read_only: boolean | number;
  /** Fifteen minutes after creation (real time). */
  expires_at: string;
  /** Set when the link started a session: it never starts another. */
  used_at: string | null;
  created_at: string;
}

export interface ConsoleSessionsTable {
  id: string;
  token_hash: string;
  /** The per-session CSRF token every form carries (random, not a secret of the cookie). */
  csrf_token: string;
  read_only: boolean | number;
  login_link_id: string;
  created_at: string;
  /** The last request; the session ends CONSOLE_IDLE_TIMEOUT after it. */
  last_seen_at: string;
  revoked_at: string | null;
}

export interface ConsoleActionsTable {
  id: string;
  session_id: string;
  /** What was asked: `invoice.void`, `payment.refund`, … */
  action: string;
  target_id: string | null;
  outcome: 'succeeded' | 'refused';
  /** The error message of a refused action, or a short note; never a secret. */
  detail: string | null;
  created_at: string;
}

export type ConsoleLoginLinkRow = Selectable<ConsoleLoginLinksTable>;
export type ConsoleSessionRow = Selectable<ConsoleSessionsTable>;
export type ConsoleActionRow = Selectable<ConsoleActionsTable>;
