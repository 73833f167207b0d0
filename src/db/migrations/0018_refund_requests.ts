// Refunds started through the API (SPEC §10 "Refunds from the API"): a refund row is committed
// `pending` BEFORE the provider is asked, so `refunds.status` gains `pending`, and the row keeps
// what the request said and what the provider answered:
// - `reason`: the client's reason (Stripe's enum when it fits, else metadata; Paystack merchant_note);
// - `provider_refund_id`: the id the provider's create call returned (Stripe `re_…`, Paystack's
//   numeric refund id); null while no usable answer came (the outcome is unknown);
// - `request_key`: a hash of (API key, Idempotency-Key, request) — a retry of a request that got
//   no usable answer resumes the same refund instead of starting a second one;
// - `failure_reason`: why the provider refused the request (the row is then `failed`);
// - `claimed_until`: the lease of whoever is calling the provider for it (the request, a
//   retry, the worker); `resume_at`: when the worker resolves it if no usable answer came
//   (both null once the provider answered or refused);
// - `refunded_at` becomes nullable: a pending refund has not been refunded yet.
// PostgreSQL alters in place; SQLite cannot alter a CHECK or a NOT NULL, so the table is
// rebuilt (its documented procedure, as 0010). Nothing references `refunds`.
import { type Kysely, sql } from 'kysely';
import { columnTypes, isPostgres } from '../column-types.ts';

const NEW_COLUMNS = [
  'reason',
  'provider_refund_id',
  'request_key',
  'failure_reason',
  'claimed_until',
  'resume_at',
] as const;

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
async function rebuildSqlite(db: Kysely<any>, statuses: readonly string[], withRequests: boolean): Promise<void> {
  const t = columnTypes(db);
  const allowed = sql.join(statuses.map((status) => sql.lit(status)));
  let table = db.schema
    .createTable('refunds_rebuilt')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('payment_id', 'text', (c) => c.notNull().references('payments.id'))
    .addColumn('provider', 'text', (c) => c.notNull())
    .addColumn('provider_reference', 'text', (c) => c.notNull())
    .addColumn('amount', t.bigint, (c) => c.notNull().check(sql`amount > 0`))
    .addColumn('currency', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull().check(sql`status in (${allowed})`))
    .addColumn('refunded_at', t.timestamp, (c) => (withRequests ? c : c.notNull()))
    .addColumn('created_at', t.timestamp, (c) => c.notNull())
    .addColumn('updated_at', t.timestamp, (c) => c.notNull())
    .addUniqueConstraint('refunds_provider_reference_unique', ['provider', 'provider_reference']);
  if (withRequests) {
    table = table
      .addColumn('reason', 'text')
      .addColumn('provider_refund_id', 'text')
      .addColumn('request_key', 'text', (c) => c.unique())
      .addColumn('failure_reason', 'text')
      .addColumn('claimed_until', t.timestamp)
      .addColumn('resume_at', t.timestamp);
  }
  await table.execute();
  const common = sql.raw(
    'id, payment_id, provider, provider_reference, amount, currency, status, refunded_at, created_at, updated_at',
  );
  // Down keeps only the old columns (the request columns are dropped with the old table).
  await sql`insert into refunds_rebuilt (${common}) select ${common} from refunds`.execute(db);
  await db.schema.dropTable('refunds').execute();
  await db.schema.alterTable('refunds_rebuilt').renameTo('refunds').execute();
  for (const field of ['created_at', 'amount']) {
    await db.schema.createIndex(`refunds_by_${field}`).on('refunds').columns([field, 'id']).execute();
  }
  await db.schema.createIndex('refunds_by_payment').on('refunds').columns(['payment_id', 'created_at', 'id']).execute();
  if (withRequests) await createResumeIndex(db);
}

/** The worker's claim of unknown refunds (resume_at due) reads this index. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
async function createResumeIndex(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('refunds_by_resume_at').on('refunds').columns(['resume_at', 'id']).execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function up(db: Kysely<any>): Promise<void> {
  if (!isPostgres(db)) {
    await rebuildSqlite(db, ['pending', 'succeeded', 'failed'], true);
    return;
  }
  await sql`alter table refunds drop constraint refunds_status_check`.execute(db);
  await sql`alter table refunds add constraint refunds_status_check check (status in ('pending', 'succeeded', 'failed'))`.execute(
    db,
  );
  await sql`alter table refunds alter column refunded_at drop not null`.execute(db);
  await db.schema
    .alterTable('refunds')
    .addColumn('reason', 'text')
    .addColumn('provider_refund_id', 'text')
    .addColumn('request_key', 'text', (c) => c.unique())
    .addColumn('failure_reason', 'text')
    .addColumn('claimed_until', columnTypes(db).timestamp)
    .addColumn('resume_at', columnTypes(db).timestamp)
    .execute();
  await createResumeIndex(db);
}

/** Fails (changing nothing on PostgreSQL) while any refund is `pending` or has no `refunded_at`. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function down(db: Kysely<any>): Promise<void> {
  if (!isPostgres(db)) {
    await rebuildSqlite(db, ['succeeded', 'failed'], false);
    return;
  }
  await sql`alter table refunds drop constraint refunds_status_check`.execute(db);
  await sql`alter table refunds add constraint refunds_status_check check (status in ('succeeded', 'failed'))`.execute(
    db,
  );
  await sql`alter table refunds alter column refunded_at set not null`.execute(db);
  await db.schema.dropIndex('refunds_by_resume_at').execute();
  for (const column of NEW_COLUMNS) await db.schema.alterTable('refunds').dropColumn(column).execute();
}
