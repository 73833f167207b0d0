// When an event row was written in real time (SPEC §6, §11): `created_at` is stamped with a
// test clock's time for a clock customer's events, which may lie before a webhook endpoint
// existed; fan-out compares the endpoint's creation with this instead. Null on rows written
// before this column existed: their `created_at` was real time.
import type { Kysely } from 'kysely';
import { columnTypes } from '../column-types.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function up(db: Kysely<any>): Promise<void> {
  const t = columnTypes(db);
  await db.schema.alterTable('events').addColumn('emitted_at', t.timestamp).execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('events').dropColumn('emitted_at').execute();
}
