import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sql } from 'kysely';
import { buildTestApp, type TestApp } from '../../test/helpers/app.ts';
import { ON_POSTGRES } from '../../test/helpers/database.ts';
import {
  breakPayments,
  PROVIDER_ENV,
  paystackCharge,
  postPaystack,
  repairPayments,
} from '../../test/helpers/provider-events.ts';
import { storeEvents } from '../inbox/inbox.ts';
import { processEvents } from '../inbox/inbox.batches.ts';
import { retryProviderEvents } from './provider-events.jobs.ts';
import { recordFailedAttempt } from '../inbox/inbox.processing.ts';
import { MAX_ATTEMPTS } from '../inbox/inbox.retry-backoff.ts';

async function onlyRow(app: TestApp) {
  return app.deps.db.selectFrom('provider_events').selectAll().executeTakeFirstOrThrow();
}

async function paymentCount(app: TestApp): Promise<number> {
  return (await app.request('GET', '/api/payments')).body.meta.total;
}

test('a processing failure is answered 200, recorded, and retried by the worker with backoff', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  await breakPayments(app);
  const res = await postPaystack(app, paystackCharge({ email: 'retry@example.com' }));
  assert.equal(res.status, 200);
  assert.deepEqual(res.body, { received: true });
  let row = await onlyRow(app);
  assert.equal(row.status, 'failed');
  assert.match(row.error ?? '', /payments are unavailable/);
  assert.equal(row.attempts, 1);
  assert.equal(row.next_attempt_at, '2026-01-15T10:00:30.000Z');
  assert.equal(await paymentCount(app), 0);
  // The failed attempt left nothing behind: not even the customer it would have created.
  assert.equal((await app.request('GET', '/api/customers')).body.meta.total, 0);

  app.clock.advance(29_000);
  assert.equal(await retryProviderEvents.run(app.deps), 0, 'not due before the backoff');
  app.clock.advance(1_000);
  assert.equal(await retryProviderEvents.run(app.deps), 1);
  row = await onlyRow(app);
  assert.equal(row.status, 'failed');
  assert.equal(row.attempts, 2);
  assert.equal(row.next_attempt_at, '2026-01-15T10:01:30.000Z', 'twice the first delay');

  await repairPayments(app);
  app.clock.advance(60_000);
  assert.equal(await retryProviderEvents.run(app.deps), 1);
  row = await onlyRow(app);
  assert.equal(row.status, 'processed');
  assert.equal(row.attempts, 3);
  assert.equal(row.error, null);
  assert.equal(row.next_attempt_at, null);
  assert.equal(row.processed_at, '2026-01-15T10:01:30.000Z');
  assert.equal(await paymentCount(app), 1);
  app.clock.advance(24 * 3_600_000);
  assert.equal(await retryProviderEvents.run(app.deps), 0, 'nothing left to do');
  assert.equal(await paymentCount(app), 1);
});

test('after the last attempt the row stays failed and is not retried', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  await breakPayments(app);
  await postPaystack(app, paystackCharge());
  await app.deps.db
    .updateTable('provider_events')
    .set({ attempts: MAX_ATTEMPTS - 1 })
    .execute();
  app.clock.advance(60_000);
  assert.equal(await retryProviderEvents.run(app.deps), 1);
  const row = await onlyRow(app);
  assert.equal(row.status, 'failed');
  assert.equal(row.attempts, MAX_ATTEMPTS);
  assert.equal(row.next_attempt_at, null);
  app.clock.advance(7 * 24 * 3_600_000);
  assert.equal(await retryProviderEvents.run(app.deps), 0);
});

test('an event stored but never processed (a crash between the commits) is processed after its lease', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const charge = paystackCharge({ amount: 4200 });
  const [id] = await storeEvents(app.deps.db, app.clock, [
    {
      provider: 'paystack',
      key: `charge.success:${charge.data.id}`,
      type: 'charge.success',
      payload: JSON.stringify(charge),
    },
  ]);
  assert.ok(id);
  assert.equal((await onlyRow(app)).status, 'received');
  app.clock.advance(9_000);
  assert.equal(await retryProviderEvents.run(app.deps), 0);
  app.clock.advance(1_000);
  assert.equal(await retryProviderEvents.run(app.deps), 1);
  assert.equal((await onlyRow(app)).status, 'processed');
  assert.equal(await paymentCount(app), 1);
  // The provider's retry of the same event is now a duplicate.
  assert.equal((await postPaystack(app, charge)).status, 200);
  assert.equal(await paymentCount(app), 1);
});

test('a redelivery of an event stored but never processed processes it at once', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const charge = paystackCharge({ amount: 4300 });
  await storeEvents(app.deps.db, app.clock, [
    {
      provider: 'paystack',
      key: `charge.success:${charge.data.id}`,
      type: 'charge.success',
      payload: JSON.stringify(charge),
    },
  ]);
  const res = await postPaystack(app, charge);
  assert.equal(res.status, 200);
  const row = await onlyRow(app);
  assert.equal(row.status, 'processed');
  assert.equal(row.attempts, 1);
  assert.equal(await paymentCount(app), 1);
  assert.equal((await postPaystack(app, charge)).status, 200);
  assert.equal(await paymentCount(app), 1);
});

test('a redelivery of an event whose processing failed retries it at once', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  await breakPayments(app);
  const charge = paystackCharge({ amount: 4400 });
  await postPaystack(app, charge);
  assert.equal((await onlyRow(app)).status, 'failed');
  await repairPayments(app);
  assert.equal((await postPaystack(app, charge)).status, 200);
  const row = await onlyRow(app);
  assert.equal(row.status, 'processed');
  assert.equal(row.attempts, 2);
  assert.equal(await paymentCount(app), 1);
});

test('an event that could not be stored is a 5xx so the provider retries', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  if (ON_POSTGRES) {
    await sql`create function refuse_event() returns trigger language plpgsql as $$ begin raise exception 'inbox is unavailable'; end $$`.execute(
      app.deps.db,
    );
    await sql`create trigger refuse_event before insert on provider_events for each row execute function refuse_event()`.execute(
      app.deps.db,
    );
  } else {
    await sql`create trigger refuse_event before insert on provider_events begin select raise(abort, 'inbox is unavailable'); end`.execute(
      app.deps.db,
    );
  }
  const res = await postPaystack(app, paystackCharge());
  assert.equal(res.status, 500);
  assert.deepEqual(res.body, { code: 'internal_error', message: 'internal server error', details: null });
  assert.equal(await paymentCount(app), 0);
});

test('one stored row processed by two processors at once takes effect once', async (t) => {
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  const charge = paystackCharge({ amount: 777 });
  const [row] = await storeEvents(app.deps.db, app.clock, [
    {
      provider: 'paystack',
      key: `charge.success:${charge.data.id}`,
      type: 'charge.success',
      payload: JSON.stringify(charge),
    },
  ]);
  assert.ok(row);
  // Both hold the row as stored ('received'), as a request and a worker past the lease would.
  const outcomes = await Promise.all([
    processEvents(app.deps.db, app.deps, [{ id: row.id, row }]),
    processEvents(app.deps.db, app.deps, [{ id: row.id, row }]),
  ]);
  assert.deepEqual(outcomes.flat().sort(), ['processed', 'skipped']);
  assert.equal(await paymentCount(app), 1);
  assert.equal((await app.request('GET', '/api/events?topic=payment.succeeded')).body.meta.total, 1);
  const stored = await onlyRow(app);
  assert.equal(stored.status, 'processed');
  assert.equal(stored.attempts, 1);
});

test('a failed attempt recorded after another processor finished the row leaves the row as that processor left it', async (t) => {
  // On PostgreSQL, rolling back the failed attempt's savepoint releases its row lock, so
  // another processor can finish the row before the failure is written: its outcome stands.
  const app = await buildTestApp(t, { env: PROVIDER_ENV });
  assert.equal((await postPaystack(app, paystackCharge({ email: 'finished@example.com' }))).status, 200);
  const finished = await onlyRow(app);
  assert.equal(finished.status, 'processed');
  await app.deps.db
    .transaction()
    .execute((trx) => recordFailedAttempt(trx, app.clock, finished.id, new Error('lost a race')));
  const row = await onlyRow(app);
  assert.equal(row.status, 'processed');
  assert.equal(row.error, null);
  assert.equal(row.attempts, finished.attempts);
  assert.equal(await paymentCount(app), 1);
});

test(
  'a row that loses a race on PostgreSQL (deadlock) runs again at once: processed, not left for the worker',
  {
    skip: !ON_POSTGRES && 'PostgreSQL only: SQLite runs one writer at a time and never reports a deadlock',
  },
  async (t) => {
    const app = await buildTestApp(t, { env: PROVIDER_ENV });
    // The first two payment inserts are aborted as PostgreSQL aborts a deadlock's victim (40P01):
    // the plain transaction and the row's first savepoint both lose, the second savepoint wins.
    // A sequence, because nextval is not undone by the rollback that the abort causes.
    await sql`create sequence lost_races`.execute(app.deps.db);
    await sql`create function lose_race() returns trigger language plpgsql as $$
    begin
      if nextval('lost_races') <= 2 then raise exception 'deadlock detected' using errcode = '40P01'; end if;
      return new;
    end $$`.execute(app.deps.db);
    await sql`create trigger lose_race before insert on payments for each row execute function lose_race()`.execute(
      app.deps.db,
    );
    assert.equal((await postPaystack(app, paystackCharge({ email: 'race@example.com' }))).status, 200);
    const row = await onlyRow(app);
    assert.equal(row.status, 'processed');
    assert.equal(row.error, null);
    assert.equal(await paymentCount(app), 1);
  },
);
