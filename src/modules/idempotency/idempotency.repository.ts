// Storage of idempotency keys (SPEC §2). Claiming is one INSERT … ON CONFLICT DO NOTHING,
// so of two instances racing on one key exactly one wins; the other reads the row and is
// told to replay, to wait (409) or that the key belongs to another request (409).
import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Database } from '../../db/database.ts';
import { claimRows } from '../../db/locking.ts';
import type { IdempotencyKeyRow } from '../../db/tables/idempotency.table.ts';

/** Who used which key for which request. */
export interface KeyUse {
  principalId: string;
  key: string;
  /** Hex SHA-256 of method, path and body. */
  fingerprint: string;
}

/** This request now owns the key; `token` proves it when storing or releasing. */
export interface Claim extends KeyUse {
  token: string;
}

export type ClaimOutcome =
  | { kind: 'claimed'; claim: Claim }
  | { kind: 'replay'; row: IdempotencyKeyRow }
  | { kind: 'mismatch' }
  | { kind: 'running' };

export interface ClaimTimes {
  now: Date;
  /** How long a completed response is kept (SPEC §2: 24 h). */
  ttlMs: number;
  /** How long a running first attempt blocks retries before a crashed one is presumed dead. */
  leaseMs: number;
}

const iso = (date: Date, plusMs = 0) => new Date(date.getTime() + plusMs).toISOString();

/**
 * Claims `use` for this request, or says why not: `replay` (a completed response for the
 * same request), `mismatch` (the key was used for another method, path or body), `running`
 * (the first request with this key has not finished). An expired row, or a running one whose
 * lease has passed (its instance crashed), is taken over as if new.
 */
export async function claimIdempotencyKey(db: Kysely<Database>, use: KeyUse, times: ClaimTimes): Promise<ClaimOutcome> {
  const now = iso(times.now);
  const fresh = {
    fingerprint: use.fingerprint,
    state: 'running' as const,
    claim_token: randomUUID(),
    response_status: null,
    response_content_type: null,
    response_body: null,
    locked_until: iso(times.now, times.leaseMs),
    created_at: now,
    expires_at: iso(times.now, times.ttlMs),
  };
  const claimed = (): ClaimOutcome => ({ kind: 'claimed', claim: { ...use, token: fresh.claim_token } });
  // Three rounds cover every interleaving: the row can vanish (purged) or be taken over
  // between our reads, but each round either decides or sees a newer row.
  for (let round = 0; round < 3; round++) {
    const inserted = await db
      .insertInto('idempotency_keys')
      .values({ principal_id: use.principalId, key: use.key, ...fresh })
      .onConflict((conflict) => conflict.columns(['principal_id', 'key']).doNothing())
      .executeTakeFirst();
    if (Number(inserted.numInsertedOrUpdatedRows ?? 0) === 1) return claimed();

    const row = await db
      .selectFrom('idempotency_keys')
      .selectAll()
      .where('principal_id', '=', use.principalId)
      .where('key', '=', use.key)
      .executeTakeFirst();
    if (!row) continue;
    const expired = row.expires_at <= now;
    if (!expired && row.fingerprint !== use.fingerprint) return { kind: 'mismatch' };
    if (!expired && row.state === 'completed') return { kind: 'replay', row };
    const abandoned = row.state === 'running' && row.locked_until !== null && row.locked_until <= now;
    if (!expired && !abandoned) return { kind: 'running' };

    const taken = await db
      .updateTable('idempotency_keys')
      .set(fresh)
      .where('principal_id', '=', use.principalId)
      .where('key', '=', use.key)
      .where('claim_token', '=', row.claim_token)
      .executeTakeFirst();
    if (Number(taken.numUpdatedRows) === 1) return claimed();
  }
  return { kind: 'running' };
}

/** The response as sent, to replay. */
export interface StoredResponse {
  status: number;
  contentType: string | null;
  body: string;
}

/** Stores the completed response of `claim`. False when the claim was lost (taken over). */
export async function completeIdempotencyKey(
  db: Kysely<Database>,
  claim: Claim,
  response: StoredResponse,
): Promise<boolean> {
  const result = await db
    .updateTable('idempotency_keys')
    .set({
      state: 'completed',
      response_status: response.status,
      response_content_type: response.contentType,
      response_body: response.body,
      locked_until: null,
    })
    .where('principal_id', '=', claim.principalId)
    .where('key', '=', claim.key)
    .where('claim_token', '=', claim.token)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/** Forgets `claim` (its request ended in a 5xx, which is not stored): the key may be retried. */
export async function releaseIdempotencyKey(db: Kysely<Database>, claim: Claim): Promise<void> {
  await db
    .deleteFrom('idempotency_keys')
    .where('principal_id', '=', claim.principalId)
    .where('key', '=', claim.key)
    .where('claim_token', '=', claim.token)
    .where('state', '=', 'running')
    .execute();
}

/** Keys whose 24 h have passed at `now`, oldest first: what the purge takes, and the worker's due probe. */
export function expiredIdempotencyKeysQuery(db: Kysely<Database>, now: Date) {
  return db
    .selectFrom('idempotency_keys')
    .select(['principal_id', 'key'])
    .where('expires_at', '<=', now.toISOString())
    .orderBy('expires_at');
}

/**
 * Deletes up to `limit` keys whose 24 h have passed (`expires_at <= now`); returns how many.
 * On PostgreSQL the rows are picked with SKIP LOCKED, so workers purging at once never wait
 * on each other.
 */
export async function purgeExpiredIdempotencyKeys(db: Kysely<Database>, now: Date, limit: number): Promise<number> {
  return db.transaction().execute(async (trx) => {
    const due = await claimRows(expiredIdempotencyKeysQuery(trx, now).limit(limit), trx).execute();
    if (due.length === 0) return 0;
    await trx
      .deleteFrom('idempotency_keys')
      .where((eb) =>
        eb(
          eb.refTuple('principal_id', 'key'),
          'in',
          due.map((row) => eb.tuple(row.principal_id, row.key)),
        ),
      )
      .execute();
    return due.length;
  });
}
