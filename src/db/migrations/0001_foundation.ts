// Foundation schema: API keys, customers, the events outbox and exact row counts.
import { type Kysely, sql } from 'kysely';
import { columnTypes } from '../column-types.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function up(db: Kysely<any>): Promise<void> {
  const t = columnTypes(db);

  await db.schema
    .createTable('row_counts')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('count', t.bigint, (c) => c.notNull().defaultTo(0))
    .execute();

  await db.schema
    .createTable('api_keys')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('scope', 'text', (c) => c.notNull().check(sql`scope in ('read', 'write', 'admin')`))
    .addColumn('key_hash', 'text', (c) => c.notNull().unique())
    .addColumn('prefix', 'text', (c) => c.notNull())
    .addColumn('last4', 'text', (c) => c.notNull())
    .addColumn('created_at', t.timestamp, (c) => c.notNull())
    .addColumn('expires_at', t.timestamp)
    .addColumn('revoked_at', t.timestamp)
    .addColumn('last_used_at', t.timestamp)
    .execute();
  await db.schema.createIndex('api_keys_created_at').on('api_keys').columns(['created_at', 'id']).execute();

  await db.schema
    .createTable('customers')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('name', 'text')
    .addColumn('phone', 'text')
    .addColumn('metadata', 'text', (c) => c.notNull().defaultTo('{}'))
    .addColumn('created_at', t.timestamp, (c) => c.notNull())
    .addColumn('updated_at', t.timestamp, (c) => c.notNull())
    .addColumn('deleted_at', t.timestamp)
    .execute();
  // One live customer per email, compared case-insensitively (SPEC §3).
  await db.schema
    .createIndex('customers_email_unique')
    .on('customers')
    .unique()
    .expression(sql`lower(email)`)
    .where(sql.ref('deleted_at'), 'is', null)
    .execute();
  // One index per allowed sort field, ending in id for the tie-break (SPEC §2 Lists).
  for (const field of ['created_at', 'updated_at', 'email', 'name']) {
    await db.schema
      .createIndex(`customers_by_${field}`)
      .on('customers')
      .columns([field, 'id'])
      .where(sql.ref('deleted_at'), 'is', null)
      .execute();
  }

  await db.schema
    .createTable('events')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('topic', 'text', (c) => c.notNull())
    .addColumn('data', 'text', (c) => c.notNull())
    .addColumn('created_at', t.timestamp, (c) => c.notNull())
    .addColumn('delivered_at', t.timestamp)
    .execute();
  await db.schema.createIndex('events_by_created_at').on('events').columns(['created_at', 'id']).execute();
  await db.schema.createIndex('events_by_topic').on('events').columns(['topic', 'created_at', 'id']).execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function down(db: Kysely<any>): Promise<void> {
  for (const table of ['events', 'customers', 'api_keys', 'row_counts']) {
    await db.schema.dropTable(table).execute();
  }
}
