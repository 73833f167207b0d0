// The database's commit version: a value that changes whenever data a read could see may
// have changed, from any writer. Equal versions read at two instants mean nothing was
// written between them, so a response computed after the first instant is still current at
// the second (the response cache, http/response-cache.ts, keys its entries by it).
//
// SQLite: `PRAGMA data_version` changes when ANOTHER connection (another process, or another
// DatabaseSync on the same file) commits, but not for this connection's own commits; for
// those, SQLite's own `total_changes()` counts every row this connection ever inserted,
// updated or deleted — through Kysely, a transaction, the worker, a raw statement or any
// path yet to be written — so no code path can write without moving it (trigger programs
// count; a foreign-key cascade or REPLACE's deletion does not, but the statement that caused
// it changed a row and counts). It counts a change when the statement runs (before the
// commit) and never goes back (a rollback leaves it moved): a version is taken before the
// read it guards, and Kysely's one-connection mutex makes that read wait for any open
// transaction to end (a read that bypassed the mutex could see uncommitted rows; none does).
// DDL is not counted; schema changes happen in migrations, before the service answers.
//
// PostgreSQL's snapshot is cluster-wide: a write to any database of the cluster moves it.
// That costs hits (the cache's hit-rate guard then stops paying the round trip), never
// correctness.
//
// PostgreSQL: `pg_current_snapshot()` — the set of transactions complete at this instant
// (xmin:xmax:in-progress list). Every transaction that wrote (it has an xid) changes it when
// it commits or aborts, whichever instance or process sent it, and it never returns to an
// earlier value; read-only transactions do not move it. It costs a round trip, which is what
// any design needs: a client who wrote through instance B and then reads through A must see
// its write, and only the database knows, at the moment of the read, that B committed (a
// NOTIFY reaches A some time after B's commit; not every write sends one either).
import type { DatabaseSync } from 'node:sqlite';
import type pg from 'pg';

/**
 * Reads the current commit version (see the file comment). Synchronous on SQLite (two
 * prepared statements on the service's own connection, ≈ 3 µs), one round trip on
 * PostgreSQL. Throws what the driver throws (closed database, lost connection).
 */
export type CommitVersionSource = () => string | Promise<string>;

/**
 * The commit version of an open SQLite connection: `<data_version>.<total_changes>`. For an
 * in-memory database (no other connection can exist) only `total_changes()` is read.
 */
export function sqliteCommitVersion(database: DatabaseSync, inMemory: boolean): CommitVersionSource {
  const changes = database.prepare('select total_changes()');
  changes.setReturnArrays(true);
  if (inMemory) return () => String((changes.get() as unknown as [number])[0]);
  const dataVersion = database.prepare('pragma data_version');
  dataVersion.setReturnArrays(true);
  return () => `${(dataVersion.get() as unknown as [number])[0]}.${(changes.get() as unknown as [number])[0]}`;
}

/** Named: each pooled connection parses it once. Array rows: no object per answer. */
const SNAPSHOT: pg.QueryArrayConfig = {
  name: 'billing_commit_version',
  text: 'select pg_current_snapshot()::text',
  rowMode: 'array',
};

/**
 * The commit version of a PostgreSQL database: the text of `pg_current_snapshot()`, one round
 * trip on `pool` directly (Kysely's executor would add ≈ 30 µs of CPU to each).
 */
export function postgresCommitVersion(pool: pg.Pool): CommitVersionSource {
  return async () => {
    const { rows } = await pool.query<[string]>(SNAPSHOT);
    return rows[0]![0];
  };
}
