// Dunning cases and the steps taken on them (SPEC §4 "Dunning case").
import { type Kysely, sql } from 'kysely';
import { columnTypes } from '../column-types.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function up(db: Kysely<any>): Promise<void> {
  const t = columnTypes(db);

  await db.schema
    .createTable('dunning_cases')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('customer_id', 'text', (c) => c.notNull().references('customers.id'))
    .addColumn('subscription_id', 'text', (c) => c.notNull().references('subscriptions.id'))
    .addColumn('payment_id', 'text')
    .addColumn('status', 'text', (c) =>
      c.notNull().check(sql`status in ('open', 'recovered', 'exhausted', 'cancelled')`),
    )
    .addColumn('reason', 'text', (c) => c.notNull().check(sql`reason in ('payment_failed', 'renewal_unpaid')`))
    .addColumn('attempts', 'integer', (c) => c.notNull().check(sql`attempts >= 1`))
    .addColumn('step', 'integer', (c) => c.notNull().check(sql`step >= 0`))
    .addColumn('next_action_at', t.timestamp)
    .addColumn('amount_due', t.bigint, (c) => c.notNull().check(sql`amount_due >= 0`))
    .addColumn('currency', 'text', (c) => c.notNull())
    .addColumn('opened_at', t.timestamp, (c) => c.notNull())
    .addColumn('closed_at', t.timestamp)
    .addColumn('created_at', t.timestamp, (c) => c.notNull())
    .addColumn('updated_at', t.timestamp, (c) => c.notNull())
    .execute();
  // SPEC §4: one open case per subscription — the database refuses a second.
  await db.schema
    .createIndex('dunning_cases_one_open_per_subscription')
    .on('dunning_cases')
    .column('subscription_id')
    .unique()
    .where(sql.ref('status'), '=', sql.lit('open'))
    .execute();
  await db.schema
    .createIndex('dunning_cases_by_subscription')
    .on('dunning_cases')
    .columns(['subscription_id', 'created_at'])
    .execute();
  // The worker's due scan and the lists' sorts, each within a status.
  for (const field of ['next_action_at', 'created_at']) {
    await db.schema
      .createIndex(`dunning_cases_by_status_${field}`)
      .on('dunning_cases')
      .columns(['status', field, 'id'])
      .execute();
  }

  await db.schema
    .createTable('dunning_steps')
    .addColumn('case_id', 'text', (c) => c.notNull().references('dunning_cases.id'))
    .addColumn('step', 'integer', (c) => c.notNull().check(sql`step >= 1`))
    .addColumn('final', t.boolean, (c) => c.notNull())
    .addColumn('event_id', 'text', (c) => c.notNull())
    .addColumn('taken_at', t.timestamp, (c) => c.notNull())
    // Each step of a case is taken once, whatever the workers do (SPEC §7: exactly once).
    .addPrimaryKeyConstraint('dunning_steps_pkey', ['case_id', 'step'])
    .execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('dunning_steps').execute();
  await db.schema.dropTable('dunning_cases').execute();
}
