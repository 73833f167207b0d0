import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp } from '../../test/helpers/app.ts';

test('every customer change is an event with the resource as the API returned it', async (t) => {
  const { request, clock } = await buildTestApp(t);
  const created = (await request('POST', '/api/customers', { body: { email: 'e@example.com' } })).body;
  clock.advance(1000);
  const updated = (await request('PATCH', `/api/customers/${created.id}`, { body: { name: 'E' } })).body;
  clock.advance(1000);
  await request('DELETE', `/api/customers/${created.id}`);
  const list = await request('GET', '/api/events');
  assert.equal(list.status, 200);
  assert.deepEqual(list.body.meta, { total: 3, page: 0, limit: 10 });
  assert.deepEqual(
    list.body.data.map((e: { topic: string }) => e.topic),
    ['customer.deleted', 'customer.updated', 'customer.created'],
  );
  assert.deepEqual(list.body.data[1].data, updated);
  assert.deepEqual(list.body.data[2].data, created);
  for (const event of list.body.data) {
    assert.match(event.id, /^evt_/);
    assert.equal(event.delivered, false);
    assert.equal(event.delivered_at, null);
  }
  const one = await request('GET', `/api/events/${list.body.data[0].id}`);
  assert.deepEqual(one.body, list.body.data[0]);
});

test('events filter on topic and delivered; bad filter values are 400', async (t) => {
  const { request } = await buildTestApp(t);
  await request('POST', '/api/customers', { body: { email: 'f1@example.com' } });
  await request('POST', '/api/customers', { body: { email: 'f2@example.com' } });
  assert.equal((await request('GET', '/api/events?topic=customer.created')).body.meta.total, 2);
  assert.equal((await request('GET', '/api/events?topic=customer.deleted')).body.meta.total, 0);
  assert.equal((await request('GET', '/api/events?delivered=false')).body.meta.total, 2);
  assert.equal((await request('GET', '/api/events?delivered=true')).body.meta.total, 0);
  for (const query of ['topic=customer.exploded', 'delivered=maybe', 'sort_by=topic']) {
    const res = await request('GET', `/api/events?${query}`);
    assert.equal(res.status, 400, query);
    assert.equal(res.body.code, 'validation_error');
  }
});

test('a failed change writes no event', async (t) => {
  const { request } = await buildTestApp(t);
  await request('POST', '/api/customers', { body: { email: 'once@example.com' } });
  assert.equal((await request('POST', '/api/customers', { body: { email: 'ONCE@example.com' } })).status, 409);
  assert.equal((await request('GET', '/api/events')).body.meta.total, 1);
});

test('unknown event ids are 404', async (t) => {
  const { request } = await buildTestApp(t);
  assert.equal((await request('GET', '/api/events/evt_01JD3Q7Z8X9Y0A1B2C3D4E5F6G')).status, 404);
  assert.equal((await request('GET', '/api/events/bogus')).body.code, 'not_found');
});
