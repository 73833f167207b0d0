// Row shape of `idempotency_keys` (SPEC §2): one row per (API key, Idempotency-Key). A row
// is `running` while its first request runs (leased until `locked_until`), then `completed`
// with the response to replay until `expires_at`.
import type { Selectable } from 'kysely';

export interface IdempotencyKeysTable {
  /** The API key's principal id (`key_…` or `bootstrap_…`): keys are scoped per API key. */
  principal_id: string;
  /** The client's Idempotency-Key, as sent (1–255 characters). */
  key: string;
  /** Hex SHA-256 of method, path and body: a reuse with another request is refused. */
  fingerprint: string;
  state: 'running' | 'completed';
  /** Random per claim: only the request that claimed the row may complete or release it. */
  claim_token: string;
  response_status: number | null;
  response_content_type: string | null;
  /** The response body as sent (text); empty for 204. */
  response_body: string | null;
  /** While `running`: when a crashed first attempt stops blocking retries. */
  locked_until: string | null;
  created_at: string;
  expires_at: string;
}

export type IdempotencyKeyRow = Selectable<IdempotencyKeysTable>;
