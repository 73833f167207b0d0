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
 * run again: 40001 serialization_failure or 40P01 deadlock_detected. SQLite never reports
 * these (one writer at a time).
 */
export function isRetryableConflict(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === '40001' || code === '40P01';
}

/** True when `error` is PostgreSQL's 55P03 lock_not_available: a NOWAIT lock found the row held. */
export function isLockNotAvailable(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === '55P03';
}
