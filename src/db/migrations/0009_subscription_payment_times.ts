// When the provider says the latest successful and the latest failed payment applied to
// each subscription happened (SPEC §5 stale reports): a report older than the other kind's
// latest does not move the subscription's status. Internal; not in the API.
import type { Kysely } from 'kysely';
import { columnTypes } from '../column-types.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function up(db: Kysely<any>): Promise<void> {
  const t = columnTypes(db);
  // One column per statement: SQLite's ALTER TABLE adds one at a time.
  await db.schema.alterTable('subscriptions').addColumn('last_payment_succeeded_at', t.timestamp).execute();
  await db.schema.alterTable('subscriptions').addColumn('last_payment_failed_at', t.timestamp).execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('subscriptions').dropColumn('last_payment_failed_at').execute();
  await db.schema.alterTable('subscriptions').dropColumn('last_payment_succeeded_at').execute();
}
