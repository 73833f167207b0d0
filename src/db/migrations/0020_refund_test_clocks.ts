// Refunds of test clock customers (SPEC §10, §11): a refund carries its customer's clock, as
// subscriptions, invoices and dunning cases do, so the job resolving refunds without a
// provider answer claims real-time refunds (`test_clock_id IS NULL`) or one clock's, each
// without a join. Existing refunds take their payment's customer's clock.
import { type Kysely, sql } from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('refunds').addColumn('test_clock_id', 'text').execute();
  await sql`
    update refunds set test_clock_id = (
      select customers.test_clock_id from payments
      join customers on customers.id = payments.customer_id
      where payments.id = refunds.payment_id
    )
    where exists (
      select 1 from payments
      join customers on customers.id = payments.customer_id
      where payments.id = refunds.payment_id and customers.test_clock_id is not null
    )`.execute(db);
  await db.schema
    .createIndex('refunds_by_test_clock')
    .on('refunds')
    .columns(['test_clock_id'])
    .where(sql.ref('test_clock_id'), 'is not', null)
    .execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('refunds_by_test_clock').execute();
  await db.schema.alterTable('refunds').dropColumn('test_clock_id').execute();
}
