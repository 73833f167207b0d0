// PostgreSQL round trips per provider event (issue 13): each statement is a network round
// trip, so the request path's cost on PostgreSQL is counted, not timed — deterministically,
// from what the pool sent (db/pg-traffic.ts).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp } from '../../../test/helpers/app.ts';
import { ON_POSTGRES } from '../../../test/helpers/database.ts';
import { PROVIDER_ENV, paystackCharge, postPaystack } from '../../../test/helpers/provider-events.ts';

/** The most round trips one charge.success of a returning payer may take (18 before issue 13, 5 before the prefetch of its reads). */
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
    assert.ok(roundTrips <= MAX_ROUND_TRIPS, `${roundTrips} round trips`);
  },
);
