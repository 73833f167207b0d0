// API keys: create, list, revoke, rotate, and resolving a presented key to a Principal.
// Keys are stored only as SHA-256 hashes (SPEC §2); the secret is returned once, at creation.
import type { Kysely } from 'kysely';
import type { Database } from '../../db/database.ts';
import { transactionWithRetry } from '../../db/transaction.ts';
import { AppError, NotFoundError, ValidationError } from '../../http/errors.ts';
import { defineList, type ListParams, type Page } from '../../http/lists.ts';
import { pickFields } from '../../http/schemas.ts';
import type { Principal } from '../../http/route.ts';
import type { Clock } from '../../shared/clock.ts';
import { isIdOf, newId } from '../../shared/ids.ts';
import { addClamped, isStorableTime, MAX_TIMESTAMP } from '../../shared/timestamps.ts';
import { generateKey, hashKey, keyHints } from './api-keys.keys.ts';
import * as repo from './api-keys.repository.ts';
import { type ApiKeyView, apiKeySchema } from './api-keys.schemas.ts';
import type { ApiKeyRow, KeyScope } from '../../db/tables/api-keys.table.ts';

export type { ApiKeyView, KeyScope };

/** Default and longest overlap during which a rotated key keeps working (SPEC §3). */
export const DEFAULT_ROTATION_GRACE_MS = 24 * 3_600_000;
export const MAX_ROTATION_GRACE_MS = 7 * 86_400_000;

/**
 * A key's row as the API shows it. An explicit pick, not left to the response schema: the
 * hash never leaves this module, whoever prints the view (routes, the CLI).
 */
export function toApiKeyView(row: ApiKeyRow): ApiKeyView {
  return pickFields(apiKeySchema, row);
}

/**
 * Creates a key. `expiresAt` (ISO 8601) must lie in the future and no later than
 * MAX_TIMESTAMP (src/shared/timestamps.ts). Returns the stored view plus the secret `key`,
 * which is not kept and cannot be shown again.
 * Throws 400 `validation_error` for an expiry that is not a date, not in the future or past
 * MAX_TIMESTAMP.
 */
export async function createApiKey(
  db: Kysely<Database>,
  clock: Clock,
  input: { name: string; scope: KeyScope; expiresAt?: string | null },
): Promise<ApiKeyView & { key: string }> {
  const now = clock.now();
  let expiresAt: string | null = null;
  if (input.expiresAt) {
    const at = new Date(input.expiresAt);
    // ValidationError, not a bare AppError: 400s are rendered in the two-shape body (SPEC §2).
    if (Number.isNaN(at.getTime())) {
      throw new ValidationError(
        'expires_at must be an ISO 8601 date-time such as 2026-11-21T18:58:03.120Z',
        'expires_at',
      );
    }
    if (at.getTime() <= now.getTime()) throw new ValidationError('expires_at must be in the future', 'expires_at');
    // The route's schema already bounds it; the CLI (`keys create --expires-at`) comes here directly.
    if (!isStorableTime(at.getTime()))
      throw new ValidationError(`expires_at must be no later than ${MAX_TIMESTAMP}`, 'expires_at');
    expiresAt = at.toISOString();
  }
  const key = generateKey();
  const row: ApiKeyRow = {
    id: newId('apiKey'),
    name: input.name,
    scope: input.scope,
    key_hash: hashKey(key),
    ...keyHints(key),
    created_at: now.toISOString(),
    expires_at: expiresAt,
    revoked_at: null,
    last_used_at: null,
  };
  await repo.insertApiKey(db, row);
  return { ...toApiKeyView(row), key };
}

/** One key by id. Throws 404 `not_found` for unknown or malformed ids. */
export async function getApiKey(db: Kysely<Database>, id: string): Promise<ApiKeyView> {
  const row = isIdOf('apiKey', id) ? await repo.findApiKey(db, id) : undefined;
  if (!row) throw new NotFoundError('api key', id);
  return toApiKeyView(row);
}

/** The fields `sort_by` may name on GET /api/api-keys. */
export const API_KEY_SORT_FIELDS = ['created_at'] as const;

/**
 * Whether any request could authenticate now: an API_KEYS bootstrap key, or a stored key
 * neither revoked nor expired (what start-up checks to tell a newcomer the next step).
 */
export async function anyUsableApiKey(
  db: Kysely<Database>,
  clock: Clock,
  bootstrapKeys: readonly string[],
): Promise<boolean> {
  return bootstrapKeys.length > 0 || (await repo.hasUsableKey(db, clock.now().toISOString()));
}

/** A page of keys, revoked ones included (they show `revoked_at`). */
export async function listApiKeys(db: Kysely<Database>, params: ListParams): Promise<Page<ApiKeyView>> {
  return apiKeysList.page(db, params);
}

const apiKeysList = defineList({
  from: (db) => repo.allApiKeys(db),
  select: (query) => query.selectAll(),
  sortable: API_KEY_SORT_FIELDS,
  map: (rows) => rows.map(toApiKeyView),
});

/** Revokes a key at once; revoking twice keeps the first time. Throws 404 for unknown ids. */
export async function revokeApiKey(db: Kysely<Database>, clock: Clock, id: string): Promise<ApiKeyView> {
  const key = await getApiKey(db, id);
  if (key.revoked_at) return key;
  const revokedAt = clock.now().toISOString();
  await repo.updateApiKey(db, id, { revoked_at: revokedAt });
  return { ...key, revoked_at: revokedAt };
}

/**
 * Issues a new key with the same name and scope, and lets the old one keep working for
 * `graceMs` (0 – 7 days; it never extends an earlier expiry). A key created with an expiry
 * is replaced by one with the same lifetime from now, so rotating renews it. Both writes
 * commit together; every deadline is clamped to MAX_TIMESTAMP (src/shared/timestamps.ts), so
 * the new key always works. Returns the new key once.
 * Throws 404 for unknown ids, 422 `invalid_state` for a revoked or expired key.
 */
export async function rotateApiKey(
  db: Kysely<Database>,
  clock: Clock,
  id: string,
  graceMs: number,
): Promise<ApiKeyView & { key: string }> {
  const old = await getApiKey(db, id);
  const now = clock.now();
  if (old.revoked_at || (old.expires_at && new Date(old.expires_at) <= now)) {
    throw new AppError('invalid_state', 'a revoked or expired key cannot be rotated');
  }
  // Both deadlines are clamped to MAX_TIMESTAMP: a key created to expire at the end of year
  // 9999 renews to the same "never", not to a year-10000 instant no database can compare.
  const graceEnd = addClamped(now, graceMs);
  const oldExpiry =
    old.expires_at && Date.parse(old.expires_at) < graceEnd.getTime() ? old.expires_at : graceEnd.toISOString();
  const lifetimeMs = old.expires_at ? Date.parse(old.expires_at) - Date.parse(old.created_at) : undefined;
  const newExpiry = lifetimeMs === undefined ? null : addClamped(now, lifetimeMs).toISOString();
  return transactionWithRetry(db, async (trx) => {
    const created = await createApiKey(trx, clock, {
      name: old.name,
      scope: old.scope,
      expiresAt: newExpiry,
    });
    await repo.updateApiKey(trx, id, { expires_at: oldExpiry });
    return created;
  });
}

/** The principal of a bootstrap key (API_KEYS) whose hash is `keyHash`: admin scope, id `bootstrap_<12 hex>`. */
export function bootstrapPrincipal(keyHash: string): Principal {
  return { id: `bootstrap_${keyHash.slice(0, 12)}`, scope: 'admin' };
}

/**
 * Resolves a presented key: bootstrap keys (admin) by hash, then stored keys that are
 * neither revoked nor expired. Returns undefined when the key is unknown.
 */
export async function authenticateKey(
  db: Kysely<Database>,
  clock: Clock,
  bootstrapKeyHashes: ReadonlySet<string>,
  presented: string,
): Promise<Principal | undefined> {
  const keyHash = hashKey(presented);
  if (bootstrapKeyHashes.has(keyHash)) return bootstrapPrincipal(keyHash);
  const row = await repo.findUsableKeyByHash(db, keyHash, clock.now().toISOString());
  return row ? { id: row.id, scope: row.scope } : undefined;
}
