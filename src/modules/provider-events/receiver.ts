// Receiving one verified event on the request path: store it (committed), then process it
// (committed), then answer (SPEC §5 "Store, then process"). PostgreSQL: each request runs its
// own two transactions here; the server groups commits itself. SQLite shares commits between
// concurrent requests (receiver.sqlite.ts). Batching and failure isolation:
// processing-batches.ts; what an event does: provider-events.service.ts.
import type { Deps } from '../../deps.ts';
import { findUnfinishedRow, storeEvents } from './inbox.ts';
import { processEvents } from './processing-batches.ts';
import type { IncomingDelivery, Receipt, Receiver } from './receipt.ts';
import { createSqliteReceiver } from './receiver.sqlite.ts';

/** The request path's receiver for `deps`' database. */
export function createReceiver(deps: Deps): Receiver {
  if (deps.database.dialect === 'sqlite') return createSqliteReceiver(deps);
  const inFlight = new Set<Promise<Receipt>>();
  return {
    receive(delivery) {
      const receipt = receiveDirectly(deps, delivery);
      inFlight.add(receipt);
      void receipt.finally(() => inFlight.delete(receipt)).catch(() => {});
      return receipt;
    },
    async idle() {
      await Promise.allSettled([...inFlight]);
    },
  };
}

/** PostgreSQL: store in one transaction, process in the next (a redelivery processes an unfinished row). */
async function receiveDirectly(deps: Deps, delivery: IncomingDelivery): Promise<Receipt> {
  const [row] = await storeEvents(deps.db, deps.clock, [delivery.event]);
  const retryId = row ? undefined : await findUnfinishedRow(deps.db, delivery.event.provider, delivery.event.key);
  const id = row?.id ?? retryId;
  if (id === undefined) return 'duplicate';
  try {
    const [outcome] = await processEvents(deps.db, deps, [
      { id, row: row ?? undefined, body: row ? delivery.body : undefined, log: delivery.log },
    ]);
    return row ? (outcome ?? 'failed') : 'duplicate';
  } catch (error) {
    // Stored but not processed: still a 200 (SPEC §5); the worker retries after the lease.
    delivery.log.error({ err: error, providerEventId: id }, 'provider event processing failed');
    return row ? 'failed' : 'duplicate';
  }
}
