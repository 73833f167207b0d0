// Row locks across dialects. PostgreSQL locks rows (FOR UPDATE, SKIP LOCKED for workers);
// SQLite needs nothing: every transaction starts with BEGIN IMMEDIATE and holds the one
// write lock until it commits, so two writers never interleave.
import type { SelectQueryBuilder } from 'kysely';
import { isPostgres } from './column-types.ts';

/** Adds FOR UPDATE on PostgreSQL: concurrent changes of the row queue behind this transaction. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- works for any select
export function forUpdate<QB extends SelectQueryBuilder<any, any, any>>(
  query: QB,
  trx: Parameters<typeof isPostgres>[0],
): QB {
  return (isPostgres(trx) ? query.forUpdate() : query) as QB;
}

/**
 * Adds FOR UPDATE SKIP LOCKED on PostgreSQL: a worker claims only rows no other worker
 * holds, and a crashed worker's rows are free again when its transaction rolls back.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- works for any select
export function claimRows<QB extends SelectQueryBuilder<any, any, any>>(
  query: QB,
  trx: Parameters<typeof isPostgres>[0],
): QB {
  return (isPostgres(trx) ? query.forUpdate().skipLocked() : query) as QB;
}
