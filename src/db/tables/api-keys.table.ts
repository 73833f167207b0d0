// Row shape of `api_keys`. Only the SHA-256 of a key is stored; `prefix` and `last4`
// let people recognise a key in a list without it being recoverable.
import type { Selectable } from 'kysely';

export const KEY_SCOPES = ['read', 'write', 'admin'] as const;
export type KeyScope = (typeof KEY_SCOPES)[number];

export interface ApiKeysTable {
  id: string;
  name: string;
  scope: KeyScope;
  /** Lowercase hex SHA-256 of the whole key. */
  key_hash: string;
  prefix: string;
  last4: string;
  created_at: string;
  expires_at: string | null;
  revoked_at: string | null;
  last_used_at: string | null;
}

export type ApiKeyRow = Selectable<ApiKeysTable>;
