// PostgreSQL round trips per provider event: each statement is a network round
// trip, so the request path's cost on PostgreSQL is counted, not timed — deterministically,
// from what the pool sent (db/pg-traffic.ts).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp } from '../../test/helpers/app.ts';
import { ON_POSTGRES } from '../../test/helpers/database.ts';
import { PROVIDER_ENV, paystackCharge, postPaystack } from '../../test/helpers/provider-events.ts';
import { storeEvents } from './inbox.ts';
import { processEvents } from './inbox.batches.ts';

/** The most round trips one charge.success of a returning payer may take (18 before the statements were shared, 5 before the prefetch of its reads). */
const MAX_ROUND_TRIPS = 3;

test(
  'PostgreSQL: a returning payer’s charge.success takes at most MAX_ROUND_TRIPS round trips',
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
    // The charge carries the payer's reusable card, saved by the first one (SPEC §10): saving
    // it again is part of the same round trips (one deferred statement that inserts nothing).
    const methods = await app.request('GET', `/api/customers/${payments.body.data[0].customer_id}/payment-methods`);
    assert.equal(methods.body.meta.total, 1);
    assert.ok(roundTrips <= MAX_ROUND_TRIPS, `${roundTrips} round trips`);
  },
);

/**
 * A batch of stored charges of distinct returning payers: its first message and its COMMIT
 * (N + 1 before the batch prefetch). A payer twice in one batch reads again for the second
 * (a prefetched answer serves once), and so do the events after it.
 */
const BATCH_ROUND_TRIPS = 2;

test(
  'PostgreSQL: a processing batch of returning payers’ charges takes BATCH_ROUND_TRIPS round trips, however many',
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
    assert.equal(roundTrips, BATCH_ROUND_TRIPS);
  },
);
