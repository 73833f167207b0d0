// Usage on a voided draft is billed again (SPEC §15 "Cancelling"): a draft renewal voided by a
// cancel or a pause bills a period that is not served, but its usage lines bill usage that was.
// Voiding it releases what it billed: a period billed the first time by it is forgotten, and a
// late adjustment it made goes back to what was billed before — kept here when the adjustment
// is written. Rows adjusted before this migration keep no earlier figures (null: nothing to restore).
import type { Kysely } from 'kysely';
import { columnTypes } from '../column-types.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function up(db: Kysely<any>): Promise<void> {
  const t = columnTypes(db);
  await db.schema.alterTable('billed_usage').addColumn('previous_quantity', 'text').execute();
  await db.schema.alterTable('billed_usage').addColumn('previous_amount', t.bigint).execute();
  await db.schema.alterTable('billed_usage').addColumn('previous_invoice_id', 'text').execute();
  await db.schema.alterTable('billed_usage').addColumn('previous_updated_at', t.timestamp).execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function down(db: Kysely<any>): Promise<void> {
  for (const column of ['previous_updated_at', 'previous_invoice_id', 'previous_amount', 'previous_quantity']) {
    await db.schema.alterTable('billed_usage').dropColumn(column).execute();
  }
}
