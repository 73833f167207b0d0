import assert from 'node:assert/strict';
import { test } from 'node:test';
import { eventCustomerId } from './events.customer.ts';

test('an event names the customer its payload is about, or none', () => {
  assert.equal(eventCustomerId({ id: 'cus_A', email: 'a@example.com' }), 'cus_A');
  assert.equal(eventCustomerId({ id: 'sub_1', customer_id: 'cus_B' }), 'cus_B');
  assert.equal(eventCustomerId({ invoice: { id: 'inv_1', customer_id: 'cus_C' }, attempt: {} }), 'cus_C');
  assert.equal(eventCustomerId({ id: 'pay_1', customer_id: null }), null);
  assert.equal(eventCustomerId({ id: 'co_1', name: 'Spring' }), null);
  assert.equal(eventCustomerId({ id: 'x', customer_id: 'not-a-customer' }), null);
  assert.equal(eventCustomerId(null), null);
  assert.equal(eventCustomerId('cus_A'), null);
});
