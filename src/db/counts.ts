// Exact row totals kept beside the rows (see counts.table.ts).
import type { Kysely, Transaction } from 'kysely';
import type { Database } from './database.ts';

export type CountName = 'customers' | 'events' | 'subscriptions' | 'payments' | 'refunds';

/**
 * Adds `delta` (may be negative) to the named total, inside the caller's transaction so
 * the total moves with the rows. Creates the counter on first use.
 */
export async function addToCount(trx: Transaction<Database>, name: CountName, delta: number): Promise<void> {
  await trx
    .insertInto('row_counts')
    .values({ name, count: delta })
    .onConflict((oc) =>
      oc.column('name').doUpdateSet((eb) => ({ count: eb('row_counts.count', '+', delta) })),
    )
    .execute();
}

/** The named total (0 when nothing was ever counted). */
export async function readCount(db: Kysely<Database>, name: CountName): Promise<number> {
  const row = await db.selectFrom('row_counts').select('count').where('name', '=', name).executeTakeFirst();
  return Number(row?.count ?? 0);
}
