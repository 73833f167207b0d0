// Exact row totals kept beside the rows (see counts.table.ts), so `meta.total` of a big list
// never counts rows per request.
//
// SQLite has one writer at a time, so a change updates the counter row directly. On
// PostgreSQL a counter row updated by every transaction is a queue: each writer holds its
// lock until commit (measured: provider-event intake capped near 230/s). There a change is
// appended to `row_count_deltas` (no lock on anything shared), a read adds the pending deltas
// to the counter row in one statement, and the worker folds the deltas into the counter.
import { type Kysely, type RawBuilder, sql, type Transaction } from 'kysely';
import { isPostgres } from './column-types.ts';
import { compiledQuery, type Param } from './compiled-queries.ts';
import type { Database } from './database.ts';
import { sendWithNextStatement } from './pg-traffic.ts';

export type CountName = 'customers' | 'events' | 'subscriptions' | 'payments' | 'refunds' | 'invoices';

/** Most deltas one foldCountDeltas call folds (the worker's batch size for it). */
export const FOLD_BATCH = 10_000;

/** Deltas collected per transaction between deferCounts and flushCounts. */
const deferred = new WeakMap<Transaction<Database>, Map<CountName, number>>();

/**
 * Adds `delta` (may be negative) to the named total, inside the caller's transaction so
 * the total moves with the rows. In a transaction under deferCounts the delta is collected
 * and written by flushCounts instead.
 */
export async function addToCount(trx: Transaction<Database>, name: CountName, delta: number): Promise<void> {
  const collected = deferred.get(trx);
  if (collected) {
    collected.set(name, (collected.get(name) ?? 0) + delta);
    return;
  }
  await writeCounts(trx, [[name, delta]]);
}

/**
 * From now on, addToCount in `trx` (this transaction object, not its savepoints) collects
 * its deltas in memory; flushCounts(trx) writes them, one statement for every total moved.
 * For a batch that moves the same totals many times (provider events: a payment and its
 * event per row). The caller MUST call flushCounts before committing; a rollback
 * just drops them (nothing was written).
 */
export function deferCounts(trx: Transaction<Database>): void {
  if (!deferred.has(trx)) deferred.set(trx, new Map());
}

/** Writes the deltas collected since deferCounts(trx) (see there) and stops collecting. */
export async function flushCounts(trx: Transaction<Database>): Promise<void> {
  const collected = deferred.get(trx);
  deferred.delete(trx);
  if (!collected) return;
  const moves = [...collected].filter(([, delta]) => delta !== 0);
  if (moves.length > 0) await writeCounts(trx, moves);
}

/**
 * PostgreSQL only: a statement that appends a delta of one per row of `source` (a CTE's name)
 * to `name`'s total, and nothing when `source` is empty — the tail of a data-modifying
 * statement that moves a total only when it wrote a row, without anyone reading its answer
 * (events.service emitEventIfInserted). Its own delta row, not collected by deferCounts.
 */
export function countRowsOf(name: CountName, source: string): RawBuilder<unknown> {
  return sql`insert into row_count_deltas (name, delta) select ${name}, count(*) from ${sql.table(source)} having count(*) > 0`;
}

/** One statement: PostgreSQL appends the deltas, SQLite adds them to the counter rows. */
async function writeCounts(
  trx: Transaction<Database>,
  moves: readonly (readonly [CountName, number])[],
): Promise<void> {
  if (isPostgres(trx)) {
    // Nobody reads its answer: it travels with the next statement (pg-traffic.ts).
    await sendWithNextStatement(
      trx,
      trx.insertInto('row_count_deltas').values(moves.map(([name, delta]) => ({ name, delta }))),
    );
    return;
  }
  await trx
    .insertInto('row_counts')
    .values(moves.map(([name, count]) => ({ name, count })))
    .onConflict((oc) =>
      oc.column('name').doUpdateSet((eb) => ({ count: eb('row_counts.count', '+', eb.ref('excluded.count')) })),
    )
    .execute();
}

/**
 * The named total as an SQL expression, for a query that reads it beside other rows (a list
 * page and its kept total in one statement): on PostgreSQL the counter plus the unfolded
 * deltas, on SQLite the counter; 0 when nothing was ever counted. Its value may come back as
 * a string (PostgreSQL's sum is numeric): read it with Number(). `name` may be a
 * compiledQuery placeholder.
 */
export function keptTotalExpression(db: Kysely<Database>, name: CountName): RawBuilder<number | string> {
  return isPostgres(db)
    ? sql<string>`(coalesce((select count from row_counts where name = ${name}), 0)
        + coalesce((select sum(delta) from row_count_deltas where name = ${name}), 0))`
    : sql<number>`coalesce((select count from row_counts where name = ${name}), 0)`;
}

const readCountQuery = compiledQuery((db, param: Param<{ name: CountName }>) =>
  db.selectNoFrom(keptTotalExpression(db, param('name')).as('total')),
);

/**
 * The named total (0 when nothing was ever counted): the counter plus unfolded deltas, read
 * at one instant (one statement, one snapshot: a fold committing meanwhile is seen whole or
 * not at all).
 */
export async function readCount(db: Kysely<Database>, name: CountName): Promise<number> {
  const row = await readCountQuery.executeTakeFirst(db, { name });
  return Number(row?.total ?? 0);
}

/** Every total by name (for /metrics), counted the same way as readCount. */
export async function readAllCounts(db: Kysely<Database>): Promise<Map<string, number>> {
  const totals = new Map<string, number>();
  const { rows } = isPostgres(db)
    ? await sql<{ name: string; total: string | number }>`
        select name, sum(total) as total from (
          select name, count as total from row_counts
          union all
          select name, delta as total from row_count_deltas
        ) as parts group by name`.execute(db)
    : await sql<{ name: string; total: number }>`select name, count as total from row_counts`.execute(db);
  for (const row of rows) totals.set(row.name, Number(row.total));
  return totals;
}

/**
 * Folds appended deltas (PostgreSQL) into their counters: up to FOLD_BATCH of them, deleted
 * and added in ONE statement, so no delta is counted twice or lost whatever runs beside it
 * (a second worker folding at once blocks on the same rows, then finds them gone).
 * Returns the number of deltas folded (always 0 on SQLite, which never appends them).
 * The worker runs it as the `fold_count_deltas` job (worker/jobs.ts).
 */
export async function foldCountDeltas(db: Kysely<Database>): Promise<number> {
  if (!isPostgres(db)) return 0;
  const { rows } = await sql<{ folded: string | number }>`
    with moved as (
      delete from row_count_deltas
      where id in (select id from row_count_deltas order by id limit ${FOLD_BATCH})
      returning name, delta
    ), summed as (
      select name, sum(delta) as delta, count(*) as n from moved group by name
    ), applied as (
      -- runs to completion although nothing reads it (PostgreSQL: data-modifying WITH)
      insert into row_counts (name, count)
      select name, delta from summed
      on conflict (name) do update set count = row_counts.count + excluded.count
    )
    select coalesce(sum(n), 0) as folded from summed`.execute(db);
  return Number(rows[0]?.folded ?? 0);
}
