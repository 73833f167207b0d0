// Count deltas (PostgreSQL): each transaction appends its change to a list total as a row of
// its own instead of updating the one counter row, so concurrent writers never wait on each
// other's row lock until commit; the worker folds the deltas into `row_counts` (db/counts.ts).
import type { Kysely } from 'kysely';
import { columnTypes, isPostgres } from '../column-types.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function up(db: Kysely<any>): Promise<void> {
  const t = columnTypes(db);
  await db.schema
    .createTable('row_count_deltas')
    // bigserial on PostgreSQL; SQLite's integer primary key is its rowid (the table stays empty there).
    .addColumn('id', isPostgres(db) ? 'bigserial' : 'integer', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('delta', t.bigint, (c) => c.notNull())
    .execute();
  await db.schema.createIndex('row_count_deltas_by_name').on('row_count_deltas').columns(['name']).execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('row_count_deltas').execute();
}
