// /api/provider-events: the inbox listed, one event with its payload and links,
// and the operator's retry of a failed or held event — through the real app, on both databases.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sql } from 'kysely';
import { buildTestApp, connectSecondInstance, type TestApp } from '../../test/helpers/app.ts';
import { ON_POSTGRES } from '../../test/helpers/database.ts';
import {
  nextSeq,
  breakPayments,
  PROVIDER_ENV,
  paystackCharge,
  paystackRefund,
  postPaystack,
  postStripe,
  stripeEvent,
  stripeInvoice,
  stripeInvoicePayment,
  repairPayments,
  stripePaymentIntent,
} from '../../test/helpers/provider-events.ts';
import { lockReference } from '../modules/payments/payments.references.ts';
import { storeEvents } from '../inbox/inbox.ts';
import { INBOX_TRANSITIONS } from '../inbox/inbox.status.ts';
import { retryProviderEvents } from '../worker/provider-events.jobs.ts';
import { INBOX_STATUSES } from '../inbox/inbox.schemas.ts';

/** The provider event whose key is `key` (exactly one), from the list. */
async function byKey(app: TestApp, key: string) {
  const list = (await app.request('GET', `/api/provider-events?event_key=${encodeURIComponent(key)}`)).body;
  assert.equal(list.meta.total, 1, key);
  return list.data[0];
}

async function detail(app: TestApp, id: string) {
  const res = await app.request('GET', `/api/provider-events/${id}`);
  assert.equal(res.status, 200, res.text);
  return res.body;
}

async function payments(app: TestApp) {
  return (await app.request('GET', '/api/payments?limit=100')).body;
}

test('the status filter offers exactly the inbox statuses', () => {
  assert.deepEqual([...INBOX_STATUSES].sort(), Object.keys(INBOX_TRANSITIONS).sort());
});

test('list: newest first, sorts by received_at, pages, filters provider, status, type and event_key; no payload', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const charge = paystackCharge({ amount: 1000 });
  const intent = stripeEvent('payment_intent.succeeded', stripePaymentIntent({ amount: 2000 }));
  const unhandled = stripeEvent('customer.created', { id: 'cus_Stripe1', object: 'customer' });
  const early = paystackRefund({ transactionReference: `T-never-${nextSeq()}`, amount: '100' });
  const unusable = stripeEvent('payment_intent.succeeded', stripePaymentIntent({ currency: 'xx' }));
  for (const post of [
    () => postPaystack(app, charge),
    () => postStripe(app, intent),
    () => postStripe(app, unhandled),
    () => postPaystack(app, early),
    () => postStripe(app, unusable),
  ]) {
    assert.equal((await post()).status, 200);
    app.clock.advance(1000);
  }

  const all = (await app.request('GET', '/api/provider-events')).body;
  assert.deepEqual(all.meta, { total: 5, page: 0, limit: 10 });
  assert.deepEqual(
    all.data.map((e: { type: string; status: string }) => `${e.type} ${e.status}`),
    [
      'payment_intent.succeeded failed',
      'refund.processed held',
      'customer.created ignored',
      'payment_intent.succeeded processed',
      'charge.success processed',
    ],
  );
  const [failed, held, , processed] = all.data;
  assert.match(failed.id, /^pev_[0-9A-Z]{26}$/);
  assert.equal(failed.provider, 'stripe');
  assert.equal(failed.event_key, unusable.id);
  assert.match(failed.error, /^UnusableEventError: /);
  assert.equal(failed.attempts, 1);
  assert.equal(failed.next_attempt_at, null, 'an unusable event is not retried');
  assert.equal(failed.processed_at, null);
  assert.equal(held.held_reference, early.data.transaction_reference);
  assert.equal(processed.processed_at, '2026-01-15T10:00:01.000Z');
  assert.equal(processed.received_at, '2026-01-15T10:00:01.000Z');
  for (const item of all.data) {
    assert.equal('payload' in item, false, 'list items carry no payload');
    assert.equal('payment_id' in item, false);
  }

  const asc = (await app.request('GET', '/api/provider-events?sort_by=received_at&sort_order=asc&limit=2&page=1')).body;
  assert.deepEqual(asc.meta, { total: 5, page: 1, limit: 2 });
  assert.deepEqual(
    asc.data.map((e: { type: string }) => e.type),
    ['customer.created', 'refund.processed'],
  );

  const count = async (query: string) => (await app.request('GET', `/api/provider-events?${query}`)).body.meta.total;
  assert.equal(await count('provider=stripe'), 3);
  assert.equal(await count('provider=paystack'), 2);
  assert.equal(await count('status=failed'), 1);
  assert.equal(await count('status=held'), 1);
  assert.equal(await count('status=received'), 0);
  assert.equal(await count('type=payment_intent.succeeded'), 2);
  assert.equal(await count('type=payment_intent.succeeded&status=processed'), 1);
  assert.equal(await count(`event_key=${intent.id}`), 1);
  assert.equal(await count(`event_key=${intent.id}&provider=paystack`), 0);
  assert.equal(await count(`event_key=charge.success:${charge.data.id}`), 1);
  assert.equal(await count('event_key=evt_never_sent'), 0);

  for (const [query, message] of [
    ['sort_by=created_at', 'sort_by must be one of: received_at'],
    ['status=done', 'status must be one of: received, processed, ignored, failed, held'],
    ['provider=paypal', 'provider must be one of: paystack, stripe'],
    ['sort_order=sideways', 'sort_order must be one of: asc, desc'],
  ]) {
    const res = await app.request('GET', `/api/provider-events?${query}`);
    assert.equal(res.status, 400, query);
    assert.equal(res.body.code, 'validation_error', query);
    assert.equal(res.body.message, message, query);
  }
  for (const query of ['event_key=evt_%00', 'type=charge.%00', `event_key=${'k'.repeat(256)}`]) {
    const res = await app.request('GET', `/api/provider-events?${query}`);
    assert.equal(res.status, 400, query);
    assert.equal(res.body.code, 'validation_error', query);
  }
});

/** `charge` as the API shows it: its authorization_code redacted. */
function redactedCode(charge: ReturnType<typeof paystackCharge>) {
  return {
    ...charge,
    data: { ...charge.data, authorization: { ...charge.data.authorization, authorization_code: '[redacted]' } },
  };
}

test('get: the payload as sent, and the payment and refunds the event reports on', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const charge = paystackCharge({ amount: 10000 });
  await postPaystack(app, charge);
  const refund = paystackRefund({ transactionReference: charge.data.reference, amount: '2500' });
  await postPaystack(app, refund);
  const [payment] = (await payments(app)).data;
  const [recorded] = (await app.request('GET', `/api/refunds?payment_id=${payment.id}`)).body.data;

  const chargeEvent = await detail(app, (await byKey(app, `charge.success:${charge.data.id}`)).id);
  assert.equal(chargeEvent.type, 'charge.success');
  assert.equal(chargeEvent.provider, 'paystack');
  assert.equal(chargeEvent.status, 'processed');
  assert.equal(chargeEvent.attempts, 1);
  assert.equal(chargeEvent.payment_id, payment.id);
  assert.deepEqual(chargeEvent.refund_ids, []);
  // As sent, but the authorization code that charges the card (SPEC §10: a secret).
  assert.deepEqual(chargeEvent.payload, redactedCode(charge));
  assert.equal(chargeEvent.payload_text, null);

  const refundEvent = (await app.request('GET', '/api/provider-events?type=refund.processed')).body.data[0];
  const refundDetail = await detail(app, refundEvent.id);
  assert.equal(refundDetail.payment_id, payment.id);
  assert.deepEqual(refundDetail.refund_ids, [recorded.id]);
  assert.deepEqual(refundDetail.payload, refund);

  const ignored = stripeEvent('customer.created', { id: 'cus_Stripe1', object: 'customer' });
  await postStripe(app, ignored);
  const ignoredDetail = await detail(app, (await byKey(app, ignored.id)).id);
  assert.equal(ignoredDetail.status, 'ignored');
  assert.equal(ignoredDetail.payment_id, null);
  assert.deepEqual(ignoredDetail.refund_ids, []);
  assert.deepEqual(ignoredDetail.payload, ignored);
});

test('get: links resolve through reference aliases to the payment the references name now', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const apiVersion = '2025-05-28.basil';
  const intent = stripePaymentIntent({ amount: 2000, email: null });
  const invoice = stripeInvoice({ style: 'basil', subscription: null, amount: 2000 });
  const invoicePaid = stripeEvent('invoice.paid', invoice, { apiVersion });
  const intentPaid = stripeEvent('payment_intent.succeeded', intent, { apiVersion });
  const link = stripeEvent(
    'invoice_payment.paid',
    stripeInvoicePayment({ invoice: invoice.id, paymentIntent: intent.id, amount: 2000 }),
    { apiVersion },
  );
  for (const event of [invoicePaid, intentPaid, link]) assert.equal((await postStripe(app, event)).status, 200);
  const list = await payments(app);
  assert.equal(list.meta.total, 1, 'the link merged the two payments');
  const [payment] = list.data;
  for (const event of [invoicePaid, intentPaid, link]) {
    const found = await detail(app, (await byKey(app, event.id)).id);
    assert.equal(found.status, 'processed', event.type);
    assert.equal(found.payment_id, payment.id, event.type);
  }
});

test('get: a stored body that is not JSON comes back as payload_text with payload null', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const [row] = await storeEvents(app.deps.db, app.clock, [
    { provider: 'paystack', key: 'charge.success:broken', type: 'charge.success', payload: '{"event": "charge.succ' },
  ]);
  assert.ok(row);
  const found = await detail(app, row.id);
  assert.equal(found.status, 'received');
  assert.equal(found.payload, null);
  assert.equal(found.payload_text, '{"event": "charge.succ');
  assert.equal(found.payment_id, null);
  assert.deepEqual(found.refund_ids, []);
});

test('unknown, malformed and other kinds of ids are 404 on get and retry', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  await postPaystack(app, paystackCharge());
  const [payment] = (await payments(app)).data;
  for (const id of ['pev_01JD3Q7Z8X9Y0A1B2C3D4E5F6G', 'pev_nope', 'nope', payment.id]) {
    for (const [method, path] of [
      ['GET', `/api/provider-events/${id}`],
      ['POST', `/api/provider-events/${id}/retry`],
    ] as const) {
      const res = await app.request(method, path);
      assert.equal(res.status, 404, `${method} ${path}`);
      assert.equal(res.body.code, 'not_found');
      assert.equal(res.body.message, `provider event ${id} not found`);
    }
  }
});

test('scopes: a read key lists and gets but cannot retry; no key is 401', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  await breakPayments(app);
  await postPaystack(app, paystackCharge());
  const created = await app.request('POST', '/api/api-keys', { body: { name: 'ops', scope: 'read' } });
  assert.equal(created.status, 201);
  const readKey = created.body.key as string;
  const [event] = (await app.request('GET', '/api/provider-events', { key: readKey })).body.data;
  assert.equal(event.status, 'failed');
  assert.equal((await app.request('GET', `/api/provider-events/${event.id}`, { key: readKey })).status, 200);
  const refused = await app.request('POST', `/api/provider-events/${event.id}/retry`, { key: readKey });
  assert.equal(refused.status, 403);
  assert.equal(refused.body.code, 'permission_error');
  for (const [method, path] of [
    ['GET', '/api/provider-events'],
    ['GET', `/api/provider-events/${event.id}`],
    ['POST', `/api/provider-events/${event.id}/retry`],
  ] as const) {
    const res = await app.request(method, path, { key: null });
    assert.equal(res.status, 401, `${method} ${path}`);
    assert.deepEqual(res.body, { code: 'authentication_error', message: 'unauthorized', details: null });
  }
  const row = await app.deps.db.selectFrom('provider_events').selectAll().executeTakeFirstOrThrow();
  assert.equal(row.attempts, 1, 'the refused retry changed nothing');
});

test('retry of a failed event processes it now and answers with the event; processed, ignored and received are 409', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  await breakPayments(app);
  const charge = paystackCharge({ amount: 4400 });
  await postPaystack(app, charge);
  const { id } = await byKey(app, `charge.success:${charge.data.id}`);
  const failed = await detail(app, id);
  assert.equal(failed.status, 'failed');
  assert.match(failed.error, /payments are unavailable/);
  assert.equal(failed.next_attempt_at, '2026-01-15T10:00:30.000Z');

  // Still broken: the retry fails again and says so, with the next retry pushed back.
  app.clock.advance(5_000);
  const again = await app.request('POST', `/api/provider-events/${id}/retry`);
  assert.equal(again.status, 200, again.text);
  assert.equal(again.body.status, 'failed');
  assert.equal(again.body.attempts, 2);
  assert.equal(again.body.next_attempt_at, '2026-01-15T10:01:05.000Z');

  await repairPayments(app);
  const retried = await app.request('POST', `/api/provider-events/${id}/retry`);
  assert.equal(retried.status, 200, retried.text);
  assert.equal(retried.body.status, 'processed');
  assert.equal(retried.body.attempts, 3);
  assert.equal(retried.body.error, null);
  assert.equal(retried.body.next_attempt_at, null);
  assert.equal(retried.body.processed_at, '2026-01-15T10:00:05.000Z');
  const list = await payments(app);
  assert.equal(list.meta.total, 1);
  assert.equal(retried.body.payment_id, list.data[0].id);
  assert.deepEqual(retried.body.payload, redactedCode(charge));

  const conflict = await app.request('POST', `/api/provider-events/${id}/retry`);
  assert.equal(conflict.status, 409);
  assert.deepEqual(conflict.body, {
    code: 'conflict',
    message: `provider event ${id} is processed; only failed or held events can be retried`,
    details: null,
  });
  app.clock.advance(24 * 3_600_000);
  assert.equal(await retryProviderEvents.run(app.deps), 0, 'nothing left for the worker');
  assert.equal((await payments(app)).meta.total, 1);

  const ignored = stripeEvent('customer.created', { id: 'cus_Stripe2', object: 'customer' });
  await postStripe(app, ignored);
  const [received] = await storeEvents(app.deps.db, app.clock, [
    { provider: 'paystack', key: 'charge.success:in-flight', type: 'charge.success', payload: '{}' },
  ]);
  assert.ok(received);
  for (const [eventId, status] of [
    [(await byKey(app, ignored.id)).id, 'ignored'],
    [received.id, 'received'],
  ]) {
    const res = await app.request('POST', `/api/provider-events/${eventId}/retry`);
    assert.equal(res.status, 409, status);
    assert.equal(res.body.code, 'conflict');
    assert.equal(res.body.message, `provider event ${eventId} is ${status}; only failed or held events can be retried`);
  }
  assert.equal((await detail(app, received.id)).status, 'received', 'a refused retry leaves the event alone');
});

test('retry of a final failure tries it once more: a refund refused for exceeding the payment fits once another refund failed', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const charge = paystackCharge({ amount: 1000 });
  await postPaystack(app, charge);
  const reference = charge.data.reference;
  const first = { transactionReference: reference, amount: '800', refundReference: `R${nextSeq()}` };
  await postPaystack(app, paystackRefund(first));
  app.clock.advance(1000);
  await postPaystack(app, paystackRefund({ transactionReference: reference, amount: '500' }));
  const [refused] = (await app.request('GET', '/api/provider-events?status=failed')).body.data;
  assert.match(refused.error, /exceeds the 200 remaining/);
  assert.equal(refused.next_attempt_at, null, 'not retried by the worker');

  // Still too much: refused again, still final.
  const again = await app.request('POST', `/api/provider-events/${refused.id}/retry`);
  assert.equal(again.status, 200);
  assert.equal(again.body.status, 'failed');
  assert.equal(again.body.attempts, 2);
  assert.equal(again.body.next_attempt_at, null);

  await postPaystack(app, paystackRefund({ ...first, failed: true }));
  const retried = await app.request('POST', `/api/provider-events/${refused.id}/retry`);
  assert.equal(retried.status, 200);
  assert.equal(retried.body.status, 'processed');
  assert.equal(retried.body.attempts, 3);
  const [payment] = (await payments(app)).data;
  assert.equal(payment.amount_refunded, 500);
  assert.equal(payment.status, 'partially_refunded');
  assert.equal(retried.body.payment_id, payment.id);
  assert.equal(retried.body.refund_ids.length, 1);
});

test('retry of a held refund: still held without its payment; applied once its payment is recorded', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const charge = paystackCharge({ amount: 3000 });
  const refund = paystackRefund({ transactionReference: charge.data.reference, amount: '1000' });
  await postPaystack(app, refund);
  const { id } = (await app.request('GET', '/api/provider-events?status=held')).body.data[0];
  const waiting = await app.request('POST', `/api/provider-events/${id}/retry`);
  assert.equal(waiting.status, 200);
  assert.equal(waiting.body.status, 'held');
  assert.equal(waiting.body.attempts, 2);
  assert.equal(waiting.body.held_reference, charge.data.reference);
  assert.equal(waiting.body.payment_id, null);
  assert.equal((await payments(app)).meta.total, 0);

  // The payment arrives: its processing releases the held refund itself; nothing is left to retry.
  await postPaystack(app, charge);
  assert.equal((await detail(app, id)).status, 'processed');
  assert.equal((await payments(app)).data[0].amount_refunded, 1000);
  assert.equal((await app.request('POST', `/api/provider-events/${id}/retry`)).status, 409);

  // A held row whose payment is recorded but which was never released (held by a version
  // that did not release refunds, or repaired by hand): the retry applies it against the
  // payment recorded now.
  const other = paystackCharge({ amount: 5000 });
  await postPaystack(app, other);
  const stuck = paystackRefund({ transactionReference: other.data.reference, amount: '2000' });
  const [row] = await storeEvents(app.deps.db, app.clock, [
    {
      provider: 'paystack',
      key: `refund.processed:${nextSeq()}`,
      type: 'refund.processed',
      payload: JSON.stringify(stuck),
    },
  ]);
  assert.ok(row);
  await app.deps.db
    .updateTable('provider_events')
    .set({ status: 'held', held_reference: other.data.reference, next_attempt_at: null, attempts: 1 })
    .where('id', '=', row.id)
    .execute();
  const applied = await app.request('POST', `/api/provider-events/${row.id}/retry`);
  assert.equal(applied.status, 200, applied.text);
  assert.equal(applied.body.status, 'processed');
  assert.equal(applied.body.attempts, 2);
  assert.equal(applied.body.held_reference, null);
  const otherPayment = (await payments(app)).data.find(
    (p: { provider_reference: string }) => p.provider_reference === other.data.reference,
  );
  assert.equal(otherPayment.amount_refunded, 2000);
  assert.equal(applied.body.payment_id, otherPayment.id);
  const refunds = (await app.request('GET', `/api/refunds?payment_id=${otherPayment.id}`)).body.data;
  assert.deepEqual(applied.body.refund_ids, [refunds[0].id]);
});

test('a held refund retried while its payment arrives is applied once, whichever runs first', async (t) => {
  for (let round = 0; round < 4; round++) {
    const app = await buildTestApp(t, { env: PROVIDER_ENV });
    const charge = paystackCharge({ amount: 3000 });
    await postPaystack(app, paystackRefund({ transactionReference: charge.data.reference, amount: '1000' }));
    const { id } = (await app.request('GET', '/api/provider-events?status=held')).body.data[0];
    // Sent in both orders (the outcome may still be either: the two race on the reference lock);
    // the deterministic orders are in the test above, the lock order in the one below.
    const sendRetry = () => app.request('POST', `/api/provider-events/${id}/retry`);
    const [retry, posted] =
      round % 2 === 0
        ? await Promise.all([sendRetry(), postPaystack(app, charge)])
        : await Promise.all([postPaystack(app, charge), sendRetry()]).then(([p, r]) => [r, p] as const);
    assert.equal(posted.status, 200);
    if (retry.status === 200) assert.ok(['held', 'processed'].includes(retry.body.status), retry.text);
    else {
      assert.equal(retry.status, 409, retry.text);
      assert.equal(retry.body.code, 'conflict');
    }
    const event = await detail(app, id);
    assert.equal(event.status, 'processed');
    const list = await payments(app);
    assert.equal(list.meta.total, 1);
    assert.equal(list.data[0].amount_refunded, 1000);
    assert.deepEqual(event.refund_ids.length, 1);
    const refunded = await app.request('GET', '/api/events?topic=payment.refunded');
    assert.equal(refunded.body.meta.total, 1, 'payment.refunded once');
  }
});

test(
  "a held refund's retry takes its payment reference's lock before the inbox row, as the payment's processing does",
  { skip: !ON_POSTGRES && 'PostgreSQL only: SQLite runs one writer at a time and takes no row locks' },
  async (t) => {
    const app = await buildTestApp(t, { env: PROVIDER_ENV });
    const charge = paystackCharge({ amount: 3000 });
    const reference = charge.data.reference;
    await postPaystack(app, paystackRefund({ transactionReference: reference, amount: '1000' }));
    const { id } = (await app.request('GET', '/api/provider-events?status=held')).body.data[0];
    // The payment's processing holds the reference (as it does until it releases the held refunds).
    const payment = await app.deps.db.startTransaction().execute();
    let released = false;
    try {
      await lockReference(payment, 'paystack', reference);
      // The advisory lock travels with the transaction's next statement (db/pg-traffic.ts): send one.
      await sql`select 1`.execute(payment);
      let settled = false;
      const retry = app.request('POST', `/api/provider-events/${id}/retry`).finally(() => {
        settled = true;
      });
      // Wait until the retry waits for the reference's lock.
      for (;;) {
        assert.equal(settled, false, 'the retry must wait for the payment reference');
        const { rows } = await sql<{ waiting: string | number }>`
          select count(*) as waiting from pg_locks
          where locktype = 'advisory' and not granted
            and ((classid::bigint << 32) | objid::bigint) = hashtextextended(${`payment:paystack:${reference}`}, 0)`.execute(
          app.deps.db,
        );
        if (Number(rows[0]?.waiting) > 0) break;
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      // Waiting there, it holds no lock on the inbox row: the payment could take it (no deadlock).
      const free = await app.deps.db
        .transaction()
        .execute((trx) => sql`select id from provider_events where id = ${id} for update skip locked`.execute(trx));
      assert.equal(free.rows.length, 1, 'the inbox row is not locked while the retry waits');
      released = true;
      await payment.commit().execute();
      const answer = await retry;
      assert.equal(answer.status, 200, answer.text);
      assert.equal(answer.body.status, 'held');
    } finally {
      // Released before the app closes, which waits for the retry in flight.
      if (!released) await payment.rollback().execute();
    }
  },
);

test('a retry racing the worker on a due failed event applies it once', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  // On PostgreSQL the worker runs as a second instance on its own pool, as in production.
  const worker = ON_POSTGRES ? await connectSecondInstance(app) : app.deps;
  if (worker !== app.deps) t.after(() => worker.close());
  await breakPayments(app);
  const charges = Array.from({ length: 6 }, (_, i) => paystackCharge({ amount: 100 + i }));
  for (const charge of charges) await postPaystack(app, charge);
  await repairPayments(app);
  app.clock.advance(30_000);
  const ids = (await app.request('GET', '/api/provider-events?status=failed&sort_order=asc')).body.data.map(
    (e: { id: string }) => e.id,
  );
  assert.equal(ids.length, charges.length);
  const [, ...answers] = await Promise.all([
    retryProviderEvents.run(worker),
    ...ids.map((id: string) => app.request('POST', `/api/provider-events/${id}/retry`)),
  ]);
  for (const answer of answers) {
    if (answer.status === 200) assert.equal(answer.body.status, 'processed', answer.text);
    else {
      assert.equal(answer.status, 409, answer.text);
      assert.match(answer.body.message, /is processed; only failed or held events can be retried$/);
    }
  }
  const list = await payments(app);
  assert.equal(list.meta.total, charges.length, 'one payment per event');
  const succeeded = await app.request('GET', '/api/events?topic=payment.succeeded&limit=100');
  assert.equal(succeeded.body.meta.total, charges.length, 'payment.succeeded once per payment');
  for (const id of ids) {
    const event = await detail(app, id);
    assert.equal(event.status, 'processed');
    assert.equal(event.attempts, 2, 'one failed attempt, then one that applied it');
  }
});

test('/openapi.json documents the three operations', async (t) => {
  const app = await buildTestApp(t);
  const doc = (await app.request('GET', '/openapi.json', { key: null })).body;
  const list = doc.paths['/api/provider-events'].get;
  assert.equal(list.operationId, 'listProviderEvents');
  assert.deepEqual(list.tags, ['Provider events']);
  const sortBy = list.parameters.find((p: { name: string }) => p.name === 'sort_by');
  assert.deepEqual(sortBy.schema.enum, ['received_at']);
  assert.equal(sortBy.schema.default, 'received_at');
  assert.equal(doc.paths['/api/provider-events/{id}'].get.operationId, 'getProviderEvent');
  const retry = doc.paths['/api/provider-events/{id}/retry'].post;
  assert.equal(retry.operationId, 'retryProviderEvent');
  assert.ok(retry.responses['409']);
});
