// Recognises database errors that are the client's doing, across both dialects.

/** True when `error` is a unique-constraint violation (PostgreSQL 23505, SQLite SQLITE_CONSTRAINT_UNIQUE). */
export function isUniqueViolation(error: unknown): boolean {
  const e = error as { code?: unknown; errcode?: unknown; message?: unknown } | null;
  if (!e) return false;
  if (e.code === '23505') return true;
  // node:sqlite: errcode 2067 = SQLITE_CONSTRAINT_UNIQUE, 1555 = SQLITE_CONSTRAINT_PRIMARYKEY
  return e.errcode === 2067 || e.errcode === 1555;
}

/**
 * True when `error` is PostgreSQL's verdict that the transaction lost a race and may simply be
 * run again: 40001 serialization_failure, 40P01 deadlock_detected, or a prepared statement a
 * concurrent migration made stale (0A000 "cached plan must not change result type"; the rerun
 * prepares it afresh, db/pg-traffic.ts). SQLite never reports these (one writer at a time).
 */
export function isRetryableConflict(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === '40001' || code === '40P01' || isStalePreparedStatement(error);
}

/**
 * True when `error` is PostgreSQL's refusal to run a prepared statement whose result columns
 * a migration changed since it was prepared (0A000 "cached plan must not change result type").
 * It is refused before it runs.
 */
export function isStalePreparedStatement(error: unknown): boolean {
  const e = error as { code?: unknown; message?: unknown } | null;
  return e?.code === '0A000' && typeof e.message === 'string' && e.message.includes('cached plan must not change');
}

/** True when `error` is PostgreSQL's 55P03 lock_not_available: a NOWAIT lock found the row held. */
export function isLockNotAvailable(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === '55P03';
}
