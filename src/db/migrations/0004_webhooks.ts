// Outbound webhooks (SPEC §3, §6): endpoints, one delivery per (event, endpoint) with its
// lease, every attempt, and the outbox's fan-out marker on `events`.
import { type Kysely, sql } from 'kysely';
import { columnTypes } from '../column-types.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function up(db: Kysely<any>): Promise<void> {
  const t = columnTypes(db);

  await db.schema
    .createTable('webhook_endpoints')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('events', 'text', (c) => c.notNull())
    .addColumn('secret', 'text')
    .addColumn('status', 'text', (c) => c.notNull().check(sql`status in ('enabled', 'disabled')`))
    .addColumn('disabled_reason', 'text', (c) => c.check(sql`disabled_reason in ('manual', 'gone', 'failing')`))
    .addColumn('failing_since', t.timestamp)
    .addColumn('created_at', t.timestamp, (c) => c.notNull())
    .addColumn('updated_at', t.timestamp, (c) => c.notNull())
    .execute();
  for (const field of ['created_at', 'updated_at', 'url']) {
    await db.schema
      .createIndex(`webhook_endpoints_by_${field}`)
      .on('webhook_endpoints')
      .columns([field, 'id'])
      .execute();
  }

  await db.schema
    .createTable('webhook_deliveries')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('endpoint_id', 'text', (c) => c.notNull().references('webhook_endpoints.id').onDelete('cascade'))
    .addColumn('event_id', 'text', (c) => c.notNull().references('events.id'))
    .addColumn('topic', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull().check(sql`status in ('pending', 'succeeded', 'failed')`))
    .addColumn('attempt_count', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('next_attempt_at', t.timestamp)
    // The lease: a worker owns the delivery until `locked_until` (its send happens outside
    // any transaction); a crashed worker's deliveries become due again when it passes.
    .addColumn('locked_until', t.timestamp)
    .addColumn('locked_by', 'text')
    .addColumn('last_attempt_at', t.timestamp)
    .addColumn('delivered_at', t.timestamp)
    .addColumn('created_at', t.timestamp, (c) => c.notNull())
    .addColumn('updated_at', t.timestamp, (c) => c.notNull())
    // Fan-out writes each (event, endpoint) pair at most once, whatever crashes or races.
    .addUniqueConstraint('webhook_deliveries_event_endpoint', ['event_id', 'endpoint_id'])
    .execute();
  // The worker's scan: due deliveries in due order. Pending deliveries of a disabled endpoint
  // are parked (next_attempt_at null) so they never clog it.
  await db.schema
    .createIndex('webhook_deliveries_due')
    .on('webhook_deliveries')
    .column('next_attempt_at')
    .where(sql.ref('status'), '=', 'pending')
    .execute();
  for (const field of ['created_at', 'updated_at']) {
    await db.schema
      .createIndex(`webhook_deliveries_by_endpoint_${field}`)
      .on('webhook_deliveries')
      .columns(['endpoint_id', field, 'id'])
      .execute();
  }

  await db.schema
    .createTable('webhook_attempts')
    .addColumn('delivery_id', 'text', (c) => c.notNull().references('webhook_deliveries.id').onDelete('cascade'))
    .addColumn('number', 'integer', (c) => c.notNull())
    .addColumn('attempted_at', t.timestamp, (c) => c.notNull())
    .addColumn('duration_ms', 'integer', (c) => c.notNull())
    .addColumn('status_code', 'integer')
    .addColumn('response_body', 'text')
    .addColumn('error', 'text')
    .addPrimaryKeyConstraint('webhook_attempts_pk', ['delivery_id', 'number'])
    .execute();

  // The outbox side: an event is fanned out once (`fanned_out_at`), and is delivered when
  // `pending_deliveries` — its deliveries that never succeeded — reaches 0.
  await db.schema.alterTable('events').addColumn('fanned_out_at', t.timestamp).execute();
  await db.schema
    .alterTable('events')
    .addColumn('pending_deliveries', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  // Events from before webhooks existed had nobody to go to: fanned out, nothing due.
  await db
    .updateTable('events')
    .set({
      fanned_out_at: sql.ref('created_at'),
      delivered_at: sql`coalesce(delivered_at, created_at)`,
    })
    .execute();
  await db.schema
    .createIndex('events_awaiting_fan_out')
    .on('events')
    .columns(['created_at', 'id'])
    .where(sql.ref('fanned_out_at'), 'is', null)
    .execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('events_awaiting_fan_out').execute();
  await db.schema.alterTable('events').dropColumn('pending_deliveries').execute();
  await db.schema.alterTable('events').dropColumn('fanned_out_at').execute();
  for (const table of ['webhook_attempts', 'webhook_deliveries', 'webhook_endpoints']) {
    await db.schema.dropTable(table).execute();
  }
}
