// `last_used_at` without a write per request: uses are collected in memory and written in
// one batch every few seconds (and on close). A crash loses at most one interval of
// "last used" times, never a key or a permission.
import type { Kysely } from 'kysely';
import type { Database } from '../../db/database.ts';

export const KEY_USAGE_FLUSH_MS = 5_000;

export class KeyUsageRecorder {
  readonly #db: Kysely<Database>;
  #pending = new Map<string, string>();
  #timer: NodeJS.Timeout | undefined;

  constructor(db: Kysely<Database>) {
    this.#db = db;
  }

  /** Notes that stored key `id` was used at `at` (ISO 8601); written at the next flush. */
  record(id: string, at: string): void {
    this.#pending.set(id, at);
    if (!this.#timer) {
      this.#timer = setTimeout(() => void this.flush().catch(() => {}), KEY_USAGE_FLUSH_MS);
      this.#timer.unref();
    }
  }

  /** Writes every pending use in one transaction. Safe to call at any time. */
  async flush(): Promise<void> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#pending.size === 0) return;
    const batch = this.#pending;
    this.#pending = new Map();
    await this.#db.transaction().execute(async (trx) => {
      for (const [id, at] of batch) {
        await trx
          .updateTable('api_keys')
          .set({ last_used_at: at })
          .where('id', '=', id)
          .where((eb) => eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<', at)]))
          .execute();
      }
    });
  }
}
