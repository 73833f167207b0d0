// Which data encryption key each stored secret is under (SPEC §10 "Saved payment methods",
// docs/operations.md "Rotating DATA_ENCRYPTION_KEY"): the counts the start-up check logs, and
// the re-encryption `billing rotate-data-key` runs. Saved methods' credentials are the only
// secrets stored encrypted: webhook endpoint secrets are stored as given (they sign, the
// service must read them back as they are) and provider keys live only in the environment.
import type { Kysely } from 'kysely';
import type { Database } from '../../db/database.ts';
import { encryptSecret, openSecret } from '../../shared/encryption.ts';

/** Rows read per statement: bounded memory, whatever the table's size. */
const BATCH = 500;

/** Every stored credential, BATCH at a time in id order (all statuses: a detached method may still be asked about). */
async function* credentialBatches(db: Kysely<Database>): AsyncGenerator<{ id: string; credential: string }[]> {
  let after = '';
  for (;;) {
    const rows = await db
      .selectFrom('payment_methods')
      .select(['id', 'credential'])
      .where('id', '>', after)
      .orderBy('id')
      .limit(BATCH)
      .execute();
    if (rows.length === 0) return;
    yield rows;
    after = rows[rows.length - 1]!.id;
  }
}

/** How the stored secrets split over the configured keys. */
export interface StoredSecretCounts {
  /** Stored secrets (saved payment methods' credentials, every status). */
  total: number;
  /** Secrets each key opens, by its position in DATA_ENCRYPTION_KEYS (0: the newest). */
  byKey: number[];
  /** Secrets no configured key opens: they cannot be charged until their key is listed again. */
  unreadable: number;
}

/**
 * Counts the stored secrets per key of `keys` (newest first) and those none opens. Reads the
 * whole `payment_methods` table, BATCH rows at a time, outside any transaction; decrypts in
 * memory and returns counts only (never a secret). For the start-up check.
 */
export async function countStoredSecrets(db: Kysely<Database>, keys: readonly Buffer[]): Promise<StoredSecretCounts> {
  const counts: StoredSecretCounts = { total: 0, byKey: keys.map(() => 0), unreadable: 0 };
  for await (const rows of credentialBatches(db)) {
    for (const row of rows) {
      counts.total += 1;
      const opened = openSecret(keys, row.credential);
      if (opened) counts.byKey[opened.keyIndex]! += 1;
      else counts.unreadable += 1;
    }
  }
  return counts;
}

/** What a rotation did. */
export interface RotationResult {
  /** Secrets re-encrypted with the newest key (they were under an older one). */
  reencrypted: number;
  /** Secrets already under the newest key (left as they were). */
  current: number;
  /** Secrets no configured key opens (left as they were). */
  unreadable: number;
}

/**
 * Re-encrypts with `keys[0]` every stored secret that an older key of `keys` opens (`billing
 * rotate-data-key`, docs/operations.md). Each batch of BATCH rows is one transaction; a row is
 * replaced only if its stored value is still the one read (compare-and-set), so a running
 * service is never disturbed and a rerun resumes where a stopped one ended. The plaintext
 * never changes, so no event is emitted and `updated_at` stays (nothing the API shows moved).
 * Rows no key opens are counted and left alone. Throws when `keys` is empty.
 */
export async function reencryptStoredSecrets(db: Kysely<Database>, keys: readonly Buffer[]): Promise<RotationResult> {
  const newest = keys[0];
  if (!newest) throw new Error('no data encryption key is configured');
  const result: RotationResult = { reencrypted: 0, current: 0, unreadable: 0 };
  for await (const rows of credentialBatches(db)) {
    const changes: { id: string; from: string; to: string }[] = [];
    for (const row of rows) {
      const opened = openSecret(keys, row.credential);
      if (!opened) result.unreadable += 1;
      else if (opened.keyIndex === 0) result.current += 1;
      else changes.push({ id: row.id, from: row.credential, to: encryptSecret(newest, opened.plaintext) });
    }
    if (changes.length === 0) continue;
    await db.transaction().execute(async (trx) => {
      for (const change of changes) {
        const updated = await trx
          .updateTable('payment_methods')
          .set({ credential: change.to })
          .where('id', '=', change.id)
          .where('credential', '=', change.from)
          .executeTakeFirst();
        if (updated.numUpdatedRows > 0n) result.reencrypted += 1;
      }
    });
  }
  return result;
}

/** Where the start-up check writes (pino's shape). */
export interface SecretsLog {
  warn(object: object, message: string): void;
  info(object: object, message: string): void;
}

/**
 * The start-up check (SPEC §10 "Saved payment methods"): counts the stored secrets per key
 * (countStoredSecrets) and logs ONE warn line when some open with no configured key — their
 * charges fail until that key is listed again — or one info line when some are still under
 * an older key (rotate-data-key would move them). Counts only, never a secret or a key.
 * Nothing is logged when every secret is under the newest key. Returns the counts.
 */
export async function checkStoredSecrets(
  db: Kysely<Database>,
  keys: readonly Buffer[],
  log: SecretsLog,
): Promise<StoredSecretCounts> {
  const counts = await countStoredSecrets(db, keys);
  const fields = { stored_secrets: counts.total, unreadable: counts.unreadable, by_key: counts.byKey };
  if (counts.unreadable > 0) {
    log.warn(
      fields,
      `${counts.unreadable} of ${counts.total} stored secrets (saved payment methods) open with no key of DATA_ENCRYPTION_KEYS: their charges fail until the key they were saved with is listed again (docs/operations.md "Rotating DATA_ENCRYPTION_KEY")`,
    );
  } else if (counts.total > (counts.byKey[0] ?? 0)) {
    log.info(
      fields,
      `${counts.total - (counts.byKey[0] ?? 0)} of ${counts.total} stored secrets are under an older DATA_ENCRYPTION_KEYS key: run \`billing rotate-data-key\` before removing it`,
    );
  }
  return counts;
}
