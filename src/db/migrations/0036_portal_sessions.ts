// The customer portal (SPEC §16): `portal_sessions` holds each link made by
// POST /api/customers/{id}/portal-sessions (one customer, one hour), `portal_logins` each
// browser session a link started (the cookie). Only SHA-256 hashes of the link token and the
// cookie token are stored: a copy of the database opens no portal. No foreign key to
// customers: a test clock's delete removes its customers, and a portal row is never read
// without its customer being read too.
import { type Kysely } from 'kysely';
import { columnTypes } from '../column-types.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function up(db: Kysely<any>): Promise<void> {
  const t = columnTypes(db);
  await db.schema
    .createTable('portal_sessions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('customer_id', 'text', (c) => c.notNull())
    // Lowercase hex SHA-256 of the link's token.
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('return_url', 'text')
    .addColumn('created_at', t.timestamp, (c) => c.notNull())
    .addColumn('expires_at', t.timestamp, (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('portal_sessions_by_customer')
    .on('portal_sessions')
    .columns(['customer_id', 'id'])
    .execute();
  await db.schema
    .createTable('portal_logins')
    // Lowercase hex SHA-256 of the cookie's token.
    .addColumn('token_hash', 'text', (c) => c.primaryKey())
    .addColumn('portal_session_id', 'text', (c) => c.notNull().references('portal_sessions.id'))
    .addColumn('customer_id', 'text', (c) => c.notNull())
    .addColumn('created_at', t.timestamp, (c) => c.notNull())
    .addColumn('expires_at', t.timestamp, (c) => c.notNull())
    .execute();
  await db.schema.createIndex('portal_logins_by_session').on('portal_logins').columns(['portal_session_id']).execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('portal_logins').execute();
  await db.schema.dropTable('portal_sessions').execute();
}
