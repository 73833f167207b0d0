// An event's delivery state (SPEC §6): when it was fanned out, how many of its deliveries
// still wait, when it counts as delivered. The webhooks module decides; these are the only
// writers of those columns, so the events table has one owner (emitEvent writes the rest).
import { type Compilable, sql, type Transaction } from 'kysely';
import { isPostgres } from '../../db/column-types.ts';
import type { Database } from '../../db/database.ts';
import { inList } from '../../db/bulk.ts';

/**
 * Marks events fanned out at `now` (ISO) with `pendingDeliveries` deliveries each. With none
 * due the event is delivered at once (`delivered_at = now`); otherwise it waits for them.
 */
export async function markEventsFannedOut(
  trx: Transaction<Database>,
  eventIds: readonly string[],
  pendingDeliveries: number,
  now: string,
): Promise<void> {
  if (eventIds.length === 0) return;
  await trx
    .updateTable('events')
    .set({
      fanned_out_at: now,
      pending_deliveries: pendingDeliveries,
      delivered_at: pendingDeliveries === 0 ? now : null,
    })
    .where(inList(trx, 'id', eventIds))
    .execute();
}

/**
 * markEventsFannedOut, after running `write` (the deliveries' INSERT, without RETURNING): on
 * PostgreSQL in ONE statement (the write as a data-modifying WITH clause, as emitEventWith),
 * on SQLite the write just before. The fan-out's deliveries and its marks thus cost one round
 * trip. Errors: the write's and the update's.
 */
export async function markEventsFannedOutWith(
  trx: Transaction<Database>,
  write: Compilable<unknown>,
  eventIds: readonly string[],
  pendingDeliveries: number,
  now: string,
): Promise<void> {
  if (eventIds.length === 0 || !isPostgres(trx)) {
    await trx.executeQuery(write.compile());
    await markEventsFannedOut(trx, eventIds, pendingDeliveries, now);
    return;
  }
  const update = trx
    .updateTable('events')
    .set({
      fanned_out_at: now,
      pending_deliveries: pendingDeliveries,
      delivered_at: pendingDeliveries === 0 ? now : null,
    })
    .where(inList(trx, 'id', eventIds));
  await sql`with written as (${write}) ${update}`.execute(trx);
}

/**
 * One delivery of each event no longer waits (it succeeded, or was dropped): the event's
 * count of pending deliveries goes down by one and, at 0, the event is delivered at `now`.
 */
export async function releaseEventDeliveries(
  trx: Transaction<Database>,
  eventIds: readonly string[],
  now: string,
): Promise<void> {
  if (eventIds.length === 0) return;
  await trx
    .updateTable('events')
    .set((eb) => ({
      pending_deliveries: eb('pending_deliveries', '-', 1),
      delivered_at: eb
        .case()
        .when('pending_deliveries', '<=', 1)
        .then(eb.fn.coalesce('delivered_at', eb.val(now)))
        .else(eb.ref('delivered_at'))
        .end(),
    }))
    .where(inList(trx, 'id', eventIds))
    .execute();
}
