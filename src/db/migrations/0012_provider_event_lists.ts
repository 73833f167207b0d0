// Indexes for GET /api/provider-events: the operator's list of the inbox, newest
// first, narrowed by status ("what failed?") or found by the provider's event key ("did
// Stripe's evt_… reach us?", whatever the provider). The unique (provider, event_key) index
// of 0003 serves a key lookup only when the provider is given; PostgreSQL 15 cannot skip its
// leading column. The `provider` and `type` filters ride on the received_at index (few
// distinct values): every index here is one more write per stored event, so only these three.
import type { Kysely } from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createIndex('provider_events_by_received_at')
    .on('provider_events')
    .columns(['received_at', 'id'])
    .execute();
  await db.schema
    .createIndex('provider_events_by_status_received_at')
    .on('provider_events')
    .columns(['status', 'received_at', 'id'])
    .execute();
  await db.schema.createIndex('provider_events_by_event_key').on('provider_events').columns(['event_key']).execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function down(db: Kysely<any>): Promise<void> {
  for (const name of [
    'provider_events_by_event_key',
    'provider_events_by_status_received_at',
    'provider_events_by_received_at',
  ]) {
    await db.schema.dropIndex(name).execute();
  }
}
