// PostgreSQL round trips per provider event: each statement whose answer the code waits for
// is a network round trip, so the request path's cost on PostgreSQL is counted, not timed —
// deterministically, from what the pool sent (db/pg-traffic.ts). The figures pin the
// statements the processing needs: a batch's reads are made once for all its rows.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp } from '../../test/helpers/app.ts';
import { ON_POSTGRES } from '../../test/helpers/database.ts';
import { PROVIDER_ENV, paystackCharge, postPaystack } from '../../test/helpers/provider-events.ts';
import { storeEvents } from './inbox.ts';
import { processEvents } from './inbox.batches.ts';

/**
 * The round trips one charge.success of a returning payer takes: the inbox insert; BEGIN, the
 * reference's lock and the payment lookup (billing/payment-batch.ts reads it for the batch);
 * the payer's customer with its saved card (one statement); the held refunds; the payment
 * with its event (one statement); the inbox row finished; COMMIT (the count deltas and the
 * NOTIFY travel with it).
 */
const ROUND_TRIPS = 7;

test(
  'PostgreSQL: a returning payer’s charge.success takes ROUND_TRIPS round trips',
  { skip: ON_POSTGRES ? false : 'counts PostgreSQL round trips; SQLite has none' },
  async (t) => {
    const app = await buildTestApp(t, { env: PROVIDER_ENV });
    assert.equal((await postPaystack(app, paystackCharge({ email: 'returning@example.com' }))).status, 200);
    const traffic = app.deps.database.traffic;
    const before = { ...traffic };
    const res = await postPaystack(app, paystackCharge({ email: 'returning@example.com' }));
    assert.equal(res.status, 200);
    const roundTrips = traffic.roundTrips - before.roundTrips;
    const statements = traffic.statements - before.statements;
    t.diagnostic(`round trips ${roundTrips}, statements ${statements}`);
    const payments = await app.request('GET', '/api/payments');
    assert.equal(payments.body.meta.total, 2);
    assert.equal(payments.body.data[0].customer_id, payments.body.data[1].customer_id);
    // The charge carries the payer's reusable card, saved by the first one (SPEC §10): it is
    // found saved and not saved again.
    const methods = await app.request('GET', `/api/customers/${payments.body.data[0].customer_id}/payment-methods`);
    assert.equal(methods.body.meta.total, 1);
    assert.equal(roundTrips, ROUND_TRIPS);
  },
);

/**
 * A batch of stored charges of distinct returning payers: per event only its payment with its
 * event (one statement); per batch the reads made for all its rows before they run
 * (billing/payment-batch.ts: the payments with the reference locks in front, the payers with
 * their saved cards, the held refunds), the rows finished in one statement, then COMMIT.
 */
const ROUND_TRIPS_PER_EVENT = 1;
const ROUND_TRIPS_PER_BATCH = 5;

test(
  'PostgreSQL: a processing batch of returning payers’ charges takes ROUND_TRIPS_PER_EVENT per event and ROUND_TRIPS_PER_BATCH more',
  { skip: ON_POSTGRES ? false : 'counts PostgreSQL round trips; SQLite has none' },
  async (t) => {
    const app = await buildTestApp(t, { env: PROVIDER_ENV });
    const emails = ['a@example.com', 'b@example.com', 'c@example.com', 'd@example.com', 'e@example.com'];
    for (const email of emails) {
      assert.equal((await postPaystack(app, paystackCharge({ email }))).status, 200);
    }
    const { deps } = app;
    const bodies = emails.map((email) => paystackCharge({ email }));
    const stored = await storeEvents(
      deps.db,
      deps.clock,
      bodies.map((body) => ({
        provider: 'paystack',
        key: `batch:${body.data.reference}`,
        type: body.event,
        payload: JSON.stringify(body),
      })),
    );
    const traffic = deps.database.traffic;
    const before = traffic.roundTrips;
    const outcomes = await processEvents(
      deps.db,
      deps,
      stored.map((row, i) => ({ id: row!.id, row: row!, body: bodies[i] })),
    );
    const roundTrips = traffic.roundTrips - before;
    t.diagnostic(`round trips ${roundTrips} for ${emails.length} events`);
    assert.deepEqual(
      outcomes,
      emails.map(() => 'processed'),
    );
    // Every charge became a payment of its payer's one customer.
    const payments = await deps.db
      .selectFrom('payments')
      .innerJoin('customers', 'customers.id', 'payments.customer_id')
      .select(['payments.provider_reference', 'customers.email'])
      .execute();
    const byReference = new Map(payments.map((row) => [row.provider_reference, row.email]));
    assert.deepEqual(
      bodies.map((body) => byReference.get(body.data.reference)),
      emails,
    );
    assert.equal((await deps.db.selectFrom('customers').select('id').execute()).length, emails.length);
    assert.equal((await deps.db.selectFrom('payment_methods').select('id').execute()).length, emails.length);
    assert.equal(roundTrips, ROUND_TRIPS_PER_EVENT * emails.length + ROUND_TRIPS_PER_BATCH);
  },
);
