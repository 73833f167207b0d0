// SQL for api_keys. No HTTP, no rules.
import type { Kysely } from 'kysely';
import { compiledQuery, type Param } from '../../db/compiled-queries.ts';
import type { Database } from '../../db/database.ts';
import type { ApiKeyRow, ApiKeysTable } from '../../db/tables/api-keys.table.ts';

export async function insertApiKey(db: Kysely<Database>, row: ApiKeysTable): Promise<void> {
  await db.insertInto('api_keys').values(row).execute();
}

export async function findApiKey(db: Kysely<Database>, id: string): Promise<ApiKeyRow | undefined> {
  return db.selectFrom('api_keys').selectAll().where('id', '=', id).executeTakeFirst();
}

const usableKeyByHash = compiledQuery((db, param: Param<{ keyHash: string; now: string }>) =>
  db
    .selectFrom('api_keys')
    .select(['id', 'scope'])
    .where('key_hash', '=', param('keyHash'))
    .where('revoked_at', 'is', null)
    .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', param('now'))])),
);

/**
 * The key with this hash if it is neither revoked nor expired at `now` (ISO 8601). Runs on
 * every request with a stored key: one compiled statement (db/compiled-queries.ts).
 */
export async function findUsableKeyByHash(
  db: Kysely<Database>,
  keyHash: string,
  now: string,
): Promise<Pick<ApiKeyRow, 'id' | 'scope'> | undefined> {
  return usableKeyByHash.executeTakeFirst(db, { keyHash, now });
}

/** Whether any stored key is neither revoked nor expired at `now` (ISO 8601). */
export async function hasUsableKey(db: Kysely<Database>, now: string): Promise<boolean> {
  const row = await db
    .selectFrom('api_keys')
    .select('id')
    .where('revoked_at', 'is', null)
    .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]))
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}

/** Every key, revoked and expired ones included, before any select: the rows GET /api/api-keys lists. */
export function allApiKeys(db: Kysely<Database>) {
  return db.selectFrom('api_keys');
}

export async function updateApiKey(
  db: Kysely<Database>,
  id: string,
  changes: Partial<Pick<ApiKeysTable, 'revoked_at' | 'expires_at'>>,
): Promise<void> {
  await db.updateTable('api_keys').set(changes).where('id', '=', id).execute();
}
