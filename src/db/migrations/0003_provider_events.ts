// Inbound provider events (SPEC §5): the inbox, payments, refunds and the provider
// subscription references learnt from events.
import { type Kysely, sql } from 'kysely';
import { columnTypes } from '../column-types.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function up(db: Kysely<any>): Promise<void> {
  const t = columnTypes(db);

  await db.schema
    .createTable('payments')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('customer_id', 'text', (c) => c.references('customers.id'))
    .addColumn('subscription_id', 'text', (c) => c.references('subscriptions.id'))
    .addColumn('provider', 'text', (c) => c.notNull())
    .addColumn('provider_reference', 'text', (c) => c.notNull())
    .addColumn('amount', t.bigint, (c) => c.notNull().check(sql`amount >= 0`))
    .addColumn('amount_refunded', t.bigint, (c) =>
      c
        .notNull()
        .defaultTo(0)
        .check(sql`amount_refunded >= 0 and amount_refunded <= amount`),
    )
    .addColumn('currency', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) =>
      c.notNull().check(sql`status in ('succeeded', 'failed', 'refunded', 'partially_refunded')`),
    )
    .addColumn('failure_reason', 'text')
    .addColumn('paid_at', t.timestamp)
    .addColumn('created_at', t.timestamp, (c) => c.notNull())
    .addColumn('updated_at', t.timestamp, (c) => c.notNull())
    // One payment per provider payment, however many events report it (SPEC §5).
    .addUniqueConstraint('payments_provider_reference_unique', ['provider', 'provider_reference'])
    .execute();
  for (const field of ['created_at', 'amount']) {
    await db.schema.createIndex(`payments_by_${field}`).on('payments').columns([field, 'id']).execute();
  }
  for (const filter of ['customer_id', 'subscription_id', 'status', 'provider']) {
    await db.schema
      .createIndex(`payments_by_${filter}_created_at`)
      .on('payments')
      .columns([filter, 'created_at', 'id'])
      .execute();
  }

  await db.schema
    .createTable('refunds')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('payment_id', 'text', (c) => c.notNull().references('payments.id'))
    .addColumn('provider', 'text', (c) => c.notNull())
    .addColumn('provider_reference', 'text', (c) => c.notNull())
    .addColumn('amount', t.bigint, (c) => c.notNull().check(sql`amount > 0`))
    .addColumn('currency', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull().check(sql`status in ('succeeded')`))
    .addColumn('refunded_at', t.timestamp, (c) => c.notNull())
    .addColumn('created_at', t.timestamp, (c) => c.notNull())
    .addColumn('updated_at', t.timestamp, (c) => c.notNull())
    .addUniqueConstraint('refunds_provider_reference_unique', ['provider', 'provider_reference'])
    .execute();
  for (const field of ['created_at', 'amount']) {
    await db.schema.createIndex(`refunds_by_${field}`).on('refunds').columns([field, 'id']).execute();
  }
  await db.schema.createIndex('refunds_by_payment').on('refunds').columns(['payment_id', 'created_at', 'id']).execute();

  // The inbox: every verified event, committed before it is processed (SPEC §5).
  await db.schema
    .createTable('provider_events')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('provider', 'text', (c) => c.notNull())
    .addColumn('event_key', 'text', (c) => c.notNull())
    .addColumn('event_type', 'text', (c) => c.notNull())
    .addColumn('payload', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) =>
      c.notNull().check(sql`status in ('received', 'processed', 'ignored', 'held', 'failed')`),
    )
    .addColumn('error', 'text')
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('received_at', t.timestamp, (c) => c.notNull())
    .addColumn('processed_at', t.timestamp)
    .addColumn('next_attempt_at', t.timestamp)
    .addColumn('held_reference', 'text')
    .addUniqueConstraint('provider_events_key_unique', ['provider', 'event_key'])
    .execute();
  await db.schema
    .createIndex('provider_events_due')
    .on('provider_events')
    .columns(['next_attempt_at'])
    .where(sql.ref('next_attempt_at'), 'is not', null)
    .execute();
  await db.schema
    .createIndex('provider_events_held')
    .on('provider_events')
    .columns(['provider', 'held_reference'])
    .where(sql.ref('held_reference'), 'is not', null)
    .execute();

  // "A subscription without metadata is matched by the provider's subscription reference
  // seen before" (SPEC §5): learnt from events that carry both.
  await db.schema
    .createTable('provider_subscription_references')
    .addColumn('provider', 'text', (c) => c.notNull())
    .addColumn('reference', 'text', (c) => c.notNull())
    .addColumn('subscription_id', 'text', (c) => c.notNull().references('subscriptions.id'))
    .addColumn('created_at', t.timestamp, (c) => c.notNull())
    .addPrimaryKeyConstraint('provider_subscription_references_pk', ['provider', 'reference'])
    .execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function down(db: Kysely<any>): Promise<void> {
  for (const table of ['provider_subscription_references', 'provider_events', 'refunds', 'payments']) {
    await db.schema.dropTable(table).execute();
  }
}
