// The operator console (SPEC §16): one-time sign-in links and the sessions they start, an
// audit row per console action, and `events.actor` (who caused an event: a console session,
// or null for the API and the worker). Tokens are stored only as SHA-256 hashes.
import { type Kysely, sql } from 'kysely';
import { columnTypes } from '../column-types.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function up(db: Kysely<any>): Promise<void> {
  const t = columnTypes(db);
  await db.schema
    .createTable('console_login_links')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('read_only', t.boolean, (c) => c.notNull())
    .addColumn('expires_at', t.timestamp, (c) => c.notNull())
    .addColumn('used_at', t.timestamp)
    .addColumn('created_at', t.timestamp, (c) => c.notNull())
    .execute();
  await db.schema
    .createTable('console_sessions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('csrf_token', 'text', (c) => c.notNull())
    .addColumn('read_only', t.boolean, (c) => c.notNull())
    .addColumn('login_link_id', 'text', (c) => c.notNull().references('console_login_links.id'))
    .addColumn('created_at', t.timestamp, (c) => c.notNull())
    .addColumn('last_seen_at', t.timestamp, (c) => c.notNull())
    .addColumn('revoked_at', t.timestamp)
    .execute();
  await db.schema
    .createTable('console_actions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('session_id', 'text', (c) => c.notNull().references('console_sessions.id'))
    .addColumn('action', 'text', (c) => c.notNull())
    .addColumn('target_id', 'text')
    .addColumn('outcome', 'text', (c) => c.notNull().check(sql`outcome in ('succeeded', 'refused')`))
    .addColumn('detail', 'text')
    .addColumn('created_at', t.timestamp, (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('console_actions_by_session')
    .on('console_actions')
    .columns(['session_id', 'created_at'])
    .execute();
  // JSON `{type, id}` of whoever caused the event through the console; null otherwise.
  await db.schema.alterTable('events').addColumn('actor', 'text').execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('events').dropColumn('actor').execute();
  await db.schema.dropTable('console_actions').execute();
  await db.schema.dropTable('console_sessions').execute();
  await db.schema.dropTable('console_login_links').execute();
}
