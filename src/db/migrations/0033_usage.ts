// Usage-based billing, ingestion and storage (SPEC §15). `meters` say which events count and
// how (count, sum, max, unique_count, last). `usage_events` keeps every accepted event; on
// PostgreSQL it is partitioned by month of `timestamp` (the partitions are created on demand
// by modules/usage/usage.partitions.ts, none here), on SQLite a plain table.
// `usage_event_keys` holds one row per (customer, transaction_id) ever accepted: a partitioned
// table cannot have a unique key without the partition column, so duplicates are detected
// here, by ON CONFLICT DO NOTHING. `usage_rollups` holds per customer, meter and UTC minute
// the count, sum, max and latest value, updated in the ingesting transaction, so a period's
// value reads minutes, not events. Numbers are exact: NUMERIC on PostgreSQL, canonical
// decimal text on SQLite. Customers gain `external_id`, the client's own key for them.
import { type Kysely, sql } from 'kysely';
import { columnTypes, isPostgres } from '../column-types.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function up(db: Kysely<any>): Promise<void> {
  const t = columnTypes(db);
  const decimal = isPostgres(db) ? 'numeric' : 'text';

  await db.schema.alterTable('customers').addColumn('external_id', 'text').execute();
  // Unique among live customers: a deleted customer's key may be given to a new one.
  await db.schema
    .createIndex('customers_external_id')
    .unique()
    .on('customers')
    .column('external_id')
    .where(sql.ref('deleted_at'), 'is', null)
    .execute();

  await db.schema
    .createTable('meters')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('event_name', 'text', (c) => c.notNull().unique())
    .addColumn('aggregation', 'text', (c) =>
      c.notNull().check(sql`aggregation in ('count', 'sum', 'max', 'unique_count', 'last')`),
    )
    .addColumn('value_property', 'text')
    .addColumn('unique_property', 'text')
    .addColumn('display_name', 'text', (c) => c.notNull())
    .addColumn('late_events', 'text', (c) => c.notNull().check(sql`late_events in ('bill_next_invoice', 'drop')`))
    .addColumn('created_at', t.timestamp, (c) => c.notNull())
    .addColumn('updated_at', t.timestamp, (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('usage_event_keys')
    .addColumn('customer_id', 'text', (c) => c.notNull())
    .addColumn('transaction_id', 'text', (c) => c.notNull())
    .addColumn('received_at', t.timestamp, (c) => c.notNull())
    .addPrimaryKeyConstraint('usage_event_keys_pkey', ['customer_id', 'transaction_id'])
    .execute();
  await db.schema.createIndex('usage_event_keys_by_received').on('usage_event_keys').column('received_at').execute();

  let events = db.schema
    .createTable('usage_events')
    .addColumn('id', 'text', (c) => c.notNull())
    .addColumn('customer_id', 'text', (c) => c.notNull())
    .addColumn('meter_id', 'text', (c) => c.notNull())
    .addColumn('event_name', 'text', (c) => c.notNull())
    .addColumn('transaction_id', 'text', (c) => c.notNull())
    .addColumn('timestamp', t.timestamp, (c) => c.notNull())
    .addColumn('received_at', t.timestamp, (c) => c.notNull())
    // The meter's property as read at ingestion: a canonical decimal (sum, max, last), the
    // distinct key (unique_count), null (count).
    .addColumn('value', 'text')
    .addColumn('properties', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('usage_events_pkey', ['timestamp', 'id']);
  if (isPostgres(db)) events = events.modifyEnd(sql`partition by range ("timestamp")`);
  await events.execute();
  await db.schema
    .createIndex('usage_events_by_customer_meter')
    .on('usage_events')
    .columns(['customer_id', 'meter_id', 'timestamp'])
    .execute();
  await db.schema
    .createIndex('usage_events_by_customer_received')
    .on('usage_events')
    .columns(['customer_id', 'received_at'])
    .execute();
  await db.schema.createIndex('usage_events_by_transaction').on('usage_events').column('transaction_id').execute();

  await db.schema
    .createTable('usage_rollups')
    .addColumn('customer_id', 'text', (c) => c.notNull())
    .addColumn('meter_id', 'text', (c) => c.notNull())
    // The UTC minute the events fell in (seconds and ms zero).
    .addColumn('bucket', t.timestamp, (c) => c.notNull())
    .addColumn('event_count', t.bigint, (c) => c.notNull())
    .addColumn('value_sum', decimal, (c) => c.notNull())
    .addColumn('value_max', decimal)
    // The bucket's latest event by (timestamp, transaction_id) and its value (`last` meters).
    .addColumn('last_timestamp', t.timestamp, (c) => c.notNull())
    .addColumn('last_transaction_id', 'text', (c) => c.notNull())
    .addColumn('last_value', decimal)
    .addPrimaryKeyConstraint('usage_rollups_pkey', ['customer_id', 'meter_id', 'bucket'])
    .execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('usage_rollups').execute();
  await db.schema.dropTable('usage_events').execute();
  await db.schema.dropTable('usage_event_keys').execute();
  await db.schema.dropTable('meters').execute();
  await db.schema.dropIndex('customers_external_id').execute();
  await db.schema.alterTable('customers').dropColumn('external_id').execute();
}
