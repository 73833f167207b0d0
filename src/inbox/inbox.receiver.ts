// Receiving one verified event on the request path: store it (committed), then process it
// (committed), then answer (SPEC §5 "Store, then process"). Both databases share commits
// between concurrent requests: SQLite in one pipelined transaction per cycle
// (inbox.receiver.sqlite.ts), PostgreSQL in a multi-row store statement and a shared
// processing transaction (inbox.receiver.postgres.ts). Batching and failure isolation:
// inbox.batches.ts; what an event does: inbox.processing.ts.
import type { Deps } from '../deps.ts';
import type { Receiver } from './inbox.receipt.ts';
import { createPostgresReceiver } from './inbox.receiver.postgres.ts';
import { createSqliteReceiver } from './inbox.receiver.sqlite.ts';

/** The request path's receiver for `deps`' database. */
export function createReceiver(deps: Deps): Receiver {
  return deps.database.dialect === 'sqlite' ? createSqliteReceiver(deps) : createPostgresReceiver(deps);
}
