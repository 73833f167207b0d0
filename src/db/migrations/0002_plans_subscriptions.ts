// Plans and subscriptions (SPEC §3, §4).
import { type Kysely, sql } from 'kysely';
import { columnTypes } from '../column-types.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function up(db: Kysely<any>): Promise<void> {
  const t = columnTypes(db);

  await db.schema
    .createTable('plans')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('amount', t.bigint, (c) => c.notNull().check(sql`amount >= 0`))
    .addColumn('currency', 'text', (c) => c.notNull())
    .addColumn('interval', 'text', (c) => c.notNull().check(sql`interval in ('day', 'week', 'month', 'year')`))
    .addColumn('interval_count', 'integer', (c) => c.notNull().check(sql`interval_count >= 1`))
    .addColumn('trial_period_days', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('active', t.boolean, (c) => c.notNull())
    .addColumn('metadata', 'text', (c) => c.notNull().defaultTo('{}'))
    .addColumn('created_at', t.timestamp, (c) => c.notNull())
    .addColumn('updated_at', t.timestamp, (c) => c.notNull())
    .execute();
  for (const field of ['created_at', 'amount', 'name']) {
    await db.schema.createIndex(`plans_by_${field}`).on('plans').columns([field, 'id']).execute();
  }

  await db.schema
    .createTable('subscriptions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('customer_id', 'text', (c) => c.notNull().references('customers.id'))
    .addColumn('plan_id', 'text', (c) => c.notNull().references('plans.id'))
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('current_period_start', t.timestamp)
    .addColumn('current_period_end', t.timestamp)
    .addColumn('trial_end', t.timestamp)
    .addColumn('cancel_at_period_end', t.boolean, (c) => c.notNull())
    .addColumn('cancelled_at', t.timestamp)
    .addColumn('ended_at', t.timestamp)
    .addColumn('cancellation_reason', 'text')
    .addColumn('cancellation_comment', 'text')
    .addColumn('metadata', 'text', (c) => c.notNull().defaultTo('{}'))
    .addColumn('created_at', t.timestamp, (c) => c.notNull())
    .addColumn('updated_at', t.timestamp, (c) => c.notNull())
    .execute();
  for (const field of ['created_at', 'current_period_end', 'status']) {
    await db.schema.createIndex(`subscriptions_by_${field}`).on('subscriptions').columns([field, 'id']).execute();
  }
  await db.schema
    .createIndex('subscriptions_by_customer')
    .on('subscriptions')
    .columns(['customer_id', 'status', 'created_at'])
    .execute();
  // The worker's due-work scans: by status, then the time that makes a row due.
  await db.schema
    .createIndex('subscriptions_due_by_period_end')
    .on('subscriptions')
    .columns(['status', 'current_period_end'])
    .execute();
  await db.schema
    .createIndex('subscriptions_due_by_created_at')
    .on('subscriptions')
    .columns(['status', 'created_at'])
    .execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('subscriptions').execute();
  await db.schema.dropTable('plans').execute();
}
