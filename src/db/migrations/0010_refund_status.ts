// Refunds can be `failed` (SPEC §5 "Refunds"): a refund that failed or was cancelled at the
// provider, possibly after succeeding, is kept with that status and no longer counts in its
// payment's `amount_refunded`. Only the status check changes. PostgreSQL alters the
// constraint; SQLite cannot alter a CHECK, so the table is rebuilt (its documented
// procedure: new table, copy, drop, rename, indexes again). Nothing references `refunds`.
import { type Kysely, sql } from 'kysely';
import { columnTypes, isPostgres } from '../column-types.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
async function setStatuses(db: Kysely<any>, statuses: readonly string[]): Promise<void> {
  const allowed = sql.join(statuses.map((status) => sql.lit(status)));
  if (isPostgres(db)) {
    // The name PostgreSQL gave the column's check in 0003.
    await sql`alter table refunds drop constraint refunds_status_check`.execute(db);
    await sql`alter table refunds add constraint refunds_status_check check (status in (${allowed}))`.execute(db);
    return;
  }
  const t = columnTypes(db);
  await db.schema
    .createTable('refunds_rebuilt')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('payment_id', 'text', (c) => c.notNull().references('payments.id'))
    .addColumn('provider', 'text', (c) => c.notNull())
    .addColumn('provider_reference', 'text', (c) => c.notNull())
    .addColumn('amount', t.bigint, (c) => c.notNull().check(sql`amount > 0`))
    .addColumn('currency', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull().check(sql`status in (${allowed})`))
    .addColumn('refunded_at', t.timestamp, (c) => c.notNull())
    .addColumn('created_at', t.timestamp, (c) => c.notNull())
    .addColumn('updated_at', t.timestamp, (c) => c.notNull())
    .addUniqueConstraint('refunds_provider_reference_unique', ['provider', 'provider_reference'])
    .execute();
  await sql`insert into refunds_rebuilt (id, payment_id, provider, provider_reference, amount, currency, status, refunded_at, created_at, updated_at)
    select id, payment_id, provider, provider_reference, amount, currency, status, refunded_at, created_at, updated_at from refunds`.execute(
    db,
  );
  await db.schema.dropTable('refunds').execute();
  await db.schema.alterTable('refunds_rebuilt').renameTo('refunds').execute();
  for (const field of ['created_at', 'amount']) {
    await db.schema.createIndex(`refunds_by_${field}`).on('refunds').columns([field, 'id']).execute();
  }
  await db.schema.createIndex('refunds_by_payment').on('refunds').columns(['payment_id', 'created_at', 'id']).execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function up(db: Kysely<any>): Promise<void> {
  await setStatuses(db, ['succeeded', 'failed']);
}

/** Fails (changing nothing on PostgreSQL) while any refund is `failed`. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function down(db: Kysely<any>): Promise<void> {
  await setStatuses(db, ['succeeded']);
}
