// Dunning retries (SPEC §10 "Dunning retries"): a dunning step first charges the saved default
// method again and waits for that charge's outcome before its reminder (`retry_requested_at`
// on the case); a charge that needs the customer (3-D Secure, OTP, a paused charge) stops
// automatic charges of its invoice for good (`charges_stopped_at`).
import type { Kysely } from 'kysely';
import { columnTypes } from '../column-types.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function up(db: Kysely<any>): Promise<void> {
  const t = columnTypes(db);
  await db.schema.alterTable('invoices').addColumn('charges_stopped_at', t.timestamp).execute();
  await db.schema.alterTable('dunning_cases').addColumn('retry_requested_at', t.timestamp).execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('dunning_cases').dropColumn('retry_requested_at').execute();
  await db.schema.alterTable('invoices').dropColumn('charges_stopped_at').execute();
}
