// What the operator console reads by index (SPEC §16): `events.customer_id` (the customer an
// event is about, written with the event; `events_by_customer`), `customers.name_normalized`
// (the name as the case-insensitive search compares it; `customers_by_name_normalized`), and
// `credit_notes_by_created_at` and `invoices_by_status_created_at` (the newest first, keyset
// pages, with or without a status).
//
// Backfills: every live customer's `name_normalized`, in TypeScript with this file's own copy
// of the folding rule so both databases hold the same values; and `customer_id` of the newest
// EVENTS_BACKFILL events only (bounded: a large outbox is not rewritten during a deploy; older
// events simply are not listed on a customer's page). The event rule reads the payload as the
// code does (modules/events/events.customer.ts): `customer_id`, else a customer's own `id`,
// else `invoice.customer_id`.
import { type Kysely, sql } from 'kysely';
import { isPostgres } from '../column-types.ts';

/** How many of the newest events get their customer_id here. */
const EVENTS_BACKFILL = 200_000;
const BATCH = 1000;

// The name folding as it stood when this migration was written (SPEC §16: NFKC, then full
// lower case); a migration keeps its own copy so a later change of the rule cannot alter it.
function normalizeName(name: string): string {
  return name.normalize('NFKC').toLowerCase();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
async function backfillNames(db: Kysely<any>): Promise<void> {
  let after = '';
  for (;;) {
    const rows: { id: string; name: string }[] = await db
      .selectFrom('customers')
      .select(['id', 'name'])
      .where('name', 'is not', null)
      .where('id', '>', after)
      .orderBy('id')
      .limit(BATCH)
      .execute();
    if (rows.length === 0) return;
    if (isPostgres(db)) {
      // One statement per batch: an UPDATE … FROM (VALUES …), every value bound.
      const values = sql.join(rows.map((row) => sql`(${row.id}, ${normalizeName(row.name)})`));
      await sql`update customers set name_normalized = v.n from (values ${values}) as v(id, n) where customers.id = v.id`.execute(
        db,
      );
    } else {
      for (const row of rows) {
        await db
          .updateTable('customers')
          .set({ name_normalized: normalizeName(row.name) })
          .where('id', '=', row.id)
          .execute();
      }
    }
    after = rows.at(-1)!.id;
  }
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
async function backfillEventCustomers(db: Kysely<any>): Promise<void> {
  const field = (path: string) =>
    isPostgres(db)
      ? sql.raw(`(data::json #>> '{${path.replaceAll('.', ',')}}')`)
      : sql.raw(`json_extract(data, '$.${path}')`);
  const isCustomer = (path: string) => sql`substr(${field(path)}, 1, 4) = 'cus_'`;
  const customerOf = sql`case
      when ${isCustomer('customer_id')} then ${field('customer_id')}
      when ${isCustomer('id')} then ${field('id')}
      when ${isCustomer('invoice.customer_id')} then ${field('invoice.customer_id')}
    end`;
  await sql`update events set customer_id = ${customerOf}
    where id in (select id from events order by id desc limit ${EVENTS_BACKFILL})`.execute(db);
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('events').addColumn('customer_id', 'text').execute();
  await backfillEventCustomers(db);
  await db.schema
    .createIndex('events_by_customer')
    .on('events')
    .columns(['customer_id', 'created_at', 'id'])
    .where(sql.ref('customer_id'), 'is not', null)
    .execute();

  await db.schema.alterTable('customers').addColumn('name_normalized', 'text').execute();
  await backfillNames(db);
  await db.schema
    .createIndex('customers_by_name_normalized')
    .on('customers')
    .columns(['name_normalized', 'id'])
    .where(sql.ref('deleted_at'), 'is', null)
    .execute();

  await db.schema.createIndex('credit_notes_by_created_at').on('credit_notes').columns(['created_at', 'id']).execute();
  await db.schema
    .createIndex('invoices_by_status_created_at')
    .on('invoices')
    .columns(['status', 'created_at', 'id'])
    .execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('invoices_by_status_created_at').execute();
  await db.schema.dropIndex('credit_notes_by_created_at').execute();
  await db.schema.dropIndex('customers_by_name_normalized').execute();
  await db.schema.alterTable('customers').dropColumn('name_normalized').execute();
  await db.schema.dropIndex('events_by_customer').execute();
  await db.schema.alterTable('events').dropColumn('customer_id').execute();
}
