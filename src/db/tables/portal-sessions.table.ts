// Row shapes of `portal_sessions` (a customer portal link, SPEC §16) and `portal_logins`
// (a browser session the link started). Only SHA-256 hashes of their tokens are stored.
import type { Selectable } from 'kysely';

export interface PortalSessionsTable {
  id: string;
  customer_id: string;
  /** Lowercase hex SHA-256 of the link's token. */
  token_hash: string;
  return_url: string | null;
  created_at: string;
  expires_at: string;
}

export interface PortalLoginsTable {
  /** Lowercase hex SHA-256 of the cookie's token. */
  token_hash: string;
  portal_session_id: string;
  customer_id: string;
  created_at: string;
  expires_at: string;
}

export type PortalSessionRow = Selectable<PortalSessionsTable>;
export type PortalLoginRow = Selectable<PortalLoginsTable>;
