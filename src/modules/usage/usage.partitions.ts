// PostgreSQL keeps usage_events in monthly partitions by `timestamp` (SPEC §15 "Scale"):
// a month's events are one table, its indexes small, and an old month leaves by
// `ALTER TABLE usage_events DETACH PARTITION usage_events_y2025m01 CONCURRENTLY` (then
// archive or drop it; docs/scaling.md). A partition is created the first time an event of
// its month is stored, before the ingesting transaction, under an advisory lock so that
// instances creating the same month queue instead of colliding. SQLite has one plain table.
import { type Kysely, sql } from 'kysely';
import { isPostgres } from '../../db/column-types.ts';
import type { Database } from '../../db/database.ts';
import { lockKey } from '../../db/locking.ts';

/** The months (`YYYY-MM`) each database is known to have a partition for, per process. */
const known = new WeakMap<Kysely<Database>, Set<string>>();

/** The partition table name of month `YYYY-MM`: `usage_events_y2026m11`. */
export function partitionName(month: string): string {
  return `usage_events_y${month.slice(0, 4)}m${month.slice(5, 7)}`;
}

/** The first instant of month `YYYY-MM` and of the month after it, ISO 8601 UTC. */
export function monthBounds(month: string): [string, string] {
  const year = Number(month.slice(0, 4));
  const index = Number(month.slice(5, 7)) - 1;
  return [new Date(Date.UTC(year, index, 1)).toISOString(), new Date(Date.UTC(year, index + 1, 1)).toISOString()];
}

/**
 * Makes sure usage_events has a partition for the month of every timestamp in `timestamps`
 * (ISO 8601, years 1970–9999): PostgreSQL only, nothing on SQLite. One statement per month
 * this process has not seen yet; `CREATE TABLE IF NOT EXISTS` makes a month another instance
 * created a no-op.
 */
export async function ensureUsagePartitions(db: Kysely<Database>, timestamps: Iterable<string>): Promise<void> {
  if (!isPostgres(db)) return;
  let seen = known.get(db);
  if (!seen) known.set(db, (seen = new Set()));
  const missing = new Set<string>();
  for (const timestamp of timestamps) {
    const month = timestamp.slice(0, 7);
    if (!seen.has(month)) missing.add(month);
  }
  if (missing.size === 0) return;
  await db.transaction().execute(async (trx) => {
    await lockKey(trx, 'usage_events partitions');
    for (const month of [...missing].sort()) {
      const [from, to] = monthBounds(month);
      // DDL takes no bound parameters: the bounds are literals this function computed from a
      // validated instant, never client text.
      await sql`create table if not exists ${sql.id(partitionName(month))} partition of usage_events for values from (${sql.lit(from)}) to (${sql.lit(to)})`.execute(
        trx,
      );
    }
  });
  for (const month of missing) seen.add(month);
}
