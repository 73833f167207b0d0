import assert from 'node:assert/strict';
import { test } from 'node:test';
import { databaseBefore, MIGRATION_CUSTOMER } from '../../../test/helpers/migrations.ts';
import { migrateToLatest } from '../migrate.ts';

const CREATED = '2026-01-15T10:00:00.000Z';

test('0040 fills events.customer_id from the payload and customers.name_normalized from the name', async (t) => {
  const { handle, db } = await databaseBefore(t, '0040_console_indexes', CREATED);
  await db.updateTable('customers').set({ name: 'ÉLODIE Ｄｕｐｏｎｔ' }).where('id', '=', MIGRATION_CUSTOMER).execute();
  const event = (id: string, topic: string, data: unknown) => ({
    id,
    topic,
    data: JSON.stringify(data),
    created_at: CREATED,
    delivered_at: null,
  });
  await db
    .insertInto('events')
    .values([
      event('evt_1', 'customer.created', { id: MIGRATION_CUSTOMER, email: 'ada@example.com' }),
      event('evt_2', 'invoice.created', { id: 'inv_1', customer_id: 'cus_B' }),
      event('evt_3', 'invoice.payment_attempted', { invoice: { id: 'inv_1', customer_id: 'cus_C' }, attempt: {} }),
      event('evt_4', 'coupon.created', { id: 'co_1', name: 'Spring' }),
      event('evt_5', 'payment.succeeded', { id: 'pay_1', customer_id: null }),
    ])
    .execute();
  assert.deepEqual(await migrateToLatest(handle), ['0040_console_indexes']);
  const events = await db.selectFrom('events').select(['id', 'customer_id']).orderBy('id').execute();
  assert.deepEqual(
    events.map((row: { customer_id: string | null }) => row.customer_id),
    [MIGRATION_CUSTOMER, 'cus_B', 'cus_C', null, null],
  );
  const customer = await db.selectFrom('customers').select('name_normalized').executeTakeFirstOrThrow();
  assert.equal(customer.name_normalized, 'élodie dupont');
});
