// Draft invoices (SPEC §12 "Drafts"): a renewal with usage or prorations is stored `draft`
// until its `finalizes_at` (period start + INVOICE_FINALIZE_DELAY), and only then numbered —
// so `status` gains `draft`, `number` becomes nullable (a draft has none; a voided draft
// never takes one, so the sequence stays gap-free), and the worker finds due drafts through
// a partial index. PostgreSQL alters in place. SQLite cannot alter a CHECK or a NOT NULL, so
// the table is rebuilt (its documented procedure, as 0010 and 0018: new table, copy, drop,
// rename, indexes again) — from its own stored definition, since the migrations are a set and
// others add columns to `invoices` in either order. Two differences from 0010/0018: `invoices`
// is referenced (invoice_payment_attempts, customer_balance_transactions) and foreign keys
// are on, while the pragma that turns them off is a no-op inside the migration's transaction;
// so the referencing rows are set aside in temporary tables while the old table is dropped,
// and put back once the new one stands under the old name (the references name `invoices`,
// so they point at it). There are no triggers or views on `invoices` (checked).
import { type Kysely, sql } from 'kysely';
import { columnTypes, isPostgres } from '../column-types.ts';

const STATUSES_BEFORE = ['open', 'paid', 'void', 'uncollectible'] as const;
const STATUSES_AFTER = ['draft', ...STATUSES_BEFORE] as const;

/** The two column definitions that change, as 0013 wrote them and as they become. */
const BEFORE = {
  number: '"number" text not null unique',
  status: `check (status in (${STATUSES_BEFORE.map((status) => `'${status}'`).join(', ')}))`,
};
const AFTER = {
  number: '"number" text unique',
  status: `check (status in (${STATUSES_AFTER.map((status) => `'${status}'`).join(', ')}))`,
};

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
async function createFinalizationIndex(db: Kysely<any>): Promise<void> {
  // The worker's claim of drafts due for finalization (finalize_invoices).
  await db.schema
    .createIndex('invoices_due_for_finalization')
    .on('invoices')
    .columns(['finalizes_at', 'id'])
    .where(sql<boolean>`status = 'draft'`)
    .execute();
}

/**
 * SQLite: `invoices` rebuilt with `from`'s column definitions replaced by `to`'s (SQLite's
 * documented procedure). The table is recreated from its own stored definition, so whatever
 * columns other migrations added — before or after this one, as the migrations are a set —
 * are kept; its indexes are recreated from their stored text; the tables whose foreign keys
 * reference it (read from the schema, not listed) have their rows set aside meanwhile. Throws
 * (the transaction rolls back) when the stored definition does not have `from`'s text.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
async function rebuildSqlite(db: Kysely<any>, from: typeof BEFORE, to: typeof AFTER): Promise<void> {
  const schema = await sql<{ type: string; name: string; sql: string | null }>`
    select type, name, sql from sqlite_master where tbl_name = 'invoices' order by type desc, name`.execute(db);
  const table = schema.rows.find((row) => row.type === 'table')?.sql;
  if (!table) throw new Error('0026: no invoices table');
  let rebuilt = table.replace(/^CREATE TABLE "invoices"/, 'CREATE TABLE "invoices_rebuilt"');
  for (const key of ['number', 'status'] as const) {
    if (!rebuilt.includes(from[key])) throw new Error(`0026: invoices has no ${from[key]}`);
    rebuilt = rebuilt.replace(from[key], to[key]);
  }
  // Indexes SQLite made itself (unique, primary key) come back with the table.
  const indexes = schema.rows.filter((row) => row.type === 'index' && row.sql !== null).map((row) => row.sql!);
  if (schema.rows.some((row) => row.type === 'trigger' || row.type === 'view')) {
    throw new Error('0026: invoices has triggers or views this rebuild does not keep');
  }
  const referencing = await sql<{ name: string }>`
    select distinct m.name from sqlite_master m, pragma_foreign_key_list(m.name) f
    where m.type = 'table' and f."table" = 'invoices' order by m.name`.execute(db);

  await sql.raw(rebuilt).execute(db);
  await sql`insert into invoices_rebuilt select * from invoices`.execute(db);
  for (const { name } of referencing.rows) {
    await sql`create temp table ${sql.ref(`${name}_aside`)} as select * from ${sql.ref(name)}`.execute(db);
    await sql`delete from ${sql.ref(name)}`.execute(db);
  }
  await db.schema.dropTable('invoices').execute();
  await db.schema.alterTable('invoices_rebuilt').renameTo('invoices').execute();
  for (const { name } of referencing.rows) {
    await sql`insert into ${sql.ref(name)} select * from ${sql.ref(`${name}_aside`)}`.execute(db);
    await sql`drop table ${sql.ref(`${name}_aside`)}`.execute(db);
  }
  for (const index of indexes) await sql.raw(index).execute(db);
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function up(db: Kysely<any>): Promise<void> {
  if (!isPostgres(db)) {
    await rebuildSqlite(db, BEFORE, AFTER);
    await db.schema.alterTable('invoices').addColumn('finalizes_at', columnTypes(db).timestamp).execute();
    await createFinalizationIndex(db);
    return;
  }
  const allowed = sql.join(STATUSES_AFTER.map((status) => sql.lit(status)));
  // The name PostgreSQL gave the column's check in 0013.
  await sql`alter table invoices drop constraint invoices_status_check`.execute(db);
  await sql`alter table invoices add constraint invoices_status_check check (status in (${allowed}))`.execute(db);
  await sql`alter table invoices alter column number drop not null`.execute(db);
  await db.schema.alterTable('invoices').addColumn('finalizes_at', columnTypes(db).timestamp).execute();
  await createFinalizationIndex(db);
}

/** Fails (changing nothing on PostgreSQL) while any invoice is a draft or has no number. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function down(db: Kysely<any>): Promise<void> {
  if (!isPostgres(db)) {
    await db.schema.dropIndex('invoices_due_for_finalization').execute();
    await db.schema.alterTable('invoices').dropColumn('finalizes_at').execute();
    await rebuildSqlite(db, AFTER, BEFORE);
    return;
  }
  const allowed = sql.join(STATUSES_BEFORE.map((status) => sql.lit(status)));
  await sql`alter table invoices drop constraint invoices_status_check`.execute(db);
  await sql`alter table invoices add constraint invoices_status_check check (status in (${allowed}))`.execute(db);
  await sql`alter table invoices alter column number set not null`.execute(db);
  await db.schema.dropIndex('invoices_due_for_finalization').execute();
  await db.schema.alterTable('invoices').dropColumn('finalizes_at').execute();
}
