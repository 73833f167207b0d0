// Recognises database errors that are the client's doing, across both dialects.

/** True when `error` is a unique-constraint violation (PostgreSQL 23505, SQLite SQLITE_CONSTRAINT_UNIQUE). */
export function isUniqueViolation(error: unknown): boolean {
  const e = error as { code?: unknown; errcode?: unknown; message?: unknown } | null;
  if (!e) return false;
  if (e.code === '23505') return true;
  // node:sqlite: errcode 2067 = SQLITE_CONSTRAINT_UNIQUE, 1555 = SQLITE_CONSTRAINT_PRIMARYKEY
  return e.errcode === 2067 || e.errcode === 1555;
}
