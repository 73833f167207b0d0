// Crash safety (SPEC §7): a service process is killed with SIGKILL in the middle of a load
// of provider events and webhook deliveries, then restarted on the same database. Every
// provider event that was answered 200 must be there exactly once, every committed event
// must be delivered at least once, and no delivery may stay stuck. Runs on the SQLite file
// in the SQLite pass and on a PostgreSQL database of its own in the PostgreSQL pass.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { sql } from 'kysely';
import { loadConfig } from '../src/config.ts';
import { openDatabase } from '../src/db/connect.ts';
import { DATA_ENCRYPTION_KEY, PAYSTACK_SECRET, paystackCharge, signPaystack } from './helpers/provider-events.ts';
import { eventually, ownDatabaseUrl, receiverCaFile, type ServiceProcess, startService } from './helpers/service.ts';
import { startReceiver } from './helpers/webhook-receiver.ts';

const EVENTS = 300;
const KILL_AFTER = 100;
const CONCURRENCY = 12;

/** Posts one signed Paystack event; resolves with the HTTP status, or 0 when the connection failed. */
async function post(service: ServiceProcess, body: string): Promise<number> {
  try {
    const res = await fetch(`${service.url}/api/notify?p=paystack`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-paystack-signature': signPaystack(body) },
      body,
    });
    await res.arrayBuffer();
    return res.status;
  } catch {
    return 0;
  }
}

test(
  'SIGKILL mid-load, then restart: acknowledged provider events exactly once, events delivered, nothing stuck',
  {
    timeout: 120_000,
  },
  async (t) => {
    const databaseUrl = await ownDatabaseUrl(t);
    const receiver = await startReceiver(t);
    const key = `crash_${randomBytes(12).toString('hex')}`;
    const env = {
      DATABASE_URL: databaseUrl,
      API_KEYS: key,
      PAYSTACK_SECRET_KEY: PAYSTACK_SECRET,
      DATA_ENCRYPTION_KEY,
      WEBHOOK_ALLOW_PRIVATE_CIDRS: '127.0.0.1/32',
      NODE_EXTRA_CA_CERTS: receiverCaFile(t),
      WORKER_POLL_INTERVAL: '100ms',
      WEBHOOK_TIMEOUT: '2s',
      WEBHOOK_RETRY_SCHEDULE: '1s,2s,4s',
      RATE_LIMIT_MAX: '0',
    };
    const first = await startService(t, env);
    const endpoint = await fetch(`${first.url}/api/webhooks`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url: receiver.url, events: ['payment.succeeded'] }),
    });
    assert.equal(endpoint.status, 201, await endpoint.text());

    // Distinct charges; each carries an email, so each makes a customer, a payment and an event.
    const bodies = Array.from({ length: EVENTS }, (_, i) =>
      JSON.stringify(
        paystackCharge({ amount: 1000 + i, email: `crash${i}.${randomBytes(3).toString('hex')}@example.com` }),
      ),
    );
    const acknowledged = new Set<number>();
    let next = 0;
    let killed = false;
    const sender = async () => {
      while (next < bodies.length) {
        const index = next++;
        const status = await post(first, bodies[index]!);
        if (status === 200) acknowledged.add(index);
        if (!killed && acknowledged.size >= KILL_AFTER) {
          killed = true;
          first.child.kill('SIGKILL');
        }
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, sender));
    assert.ok(killed, 'the process was killed mid-load');
    assert.equal(await first.exited, 'SIGKILL');
    assert.ok(acknowledged.size >= KILL_AFTER && acknowledged.size < EVENTS, `acknowledged ${acknowledged.size}`);

    const handle = openDatabase(loadConfig({ DATABASE_URL: databaseUrl }).database);
    t.after(() => handle.close());
    const { db } = handle;

    // Every acknowledged event survived the crash, before anything restarts.
    const stored = new Set((await db.selectFrom('provider_events').select('payload').execute()).map((r) => r.payload));
    for (const index of acknowledged) assert.ok(stored.has(bodies[index]!), `acknowledged event ${index} was stored`);

    // The deliveries the killed process had leased would go out again once their leases run
    // out (WEBHOOK_TIMEOUT + the dispatcher's 15 s margin, ≈ 17 s of waiting): end those leases
    // now instead, as that wait would. The point here is that they are sent again, not how long
    // a lease lasts (src/worker/webhook-dispatcher.test.ts runs a lease out on the injected clock).
    await db
      .updateTable('webhook_deliveries')
      .set({ locked_until: new Date().toISOString() })
      .where('locked_by', 'like', `%:${first.child.pid}:%`)
      .where('status', '=', 'pending')
      .execute();

    // Restart on the same database; the provider retries what was not acknowledged, and
    // (as providers do) a few that were.
    const second = await startService(t, env);
    const retries = bodies.map((_, i) => i).filter((i) => !acknowledged.has(i) || i % 25 === 0);
    for (let i = 0; i < retries.length; i += CONCURRENCY) {
      const statuses = await Promise.all(
        retries.slice(i, i + CONCURRENCY).map((index) => post(second, bodies[index]!)),
      );
      assert.ok(
        statuses.every((s) => s === 200),
        `retries answered ${statuses.join(',')}`,
      );
    }

    await eventually(
      async () => {
        const pending = await db
          .selectFrom('webhook_deliveries')
          .select(sql<number>`count(*)`.as('n'))
          .where('status', '!=', 'succeeded')
          .executeTakeFirstOrThrow();
        const undelivered = await db
          .selectFrom('events')
          .select(sql<number>`count(*)`.as('n'))
          .where('topic', '=', 'payment.succeeded')
          .where('delivered_at', 'is', null)
          .executeTakeFirstOrThrow();
        const unprocessed = await db
          .selectFrom('provider_events')
          .select(sql<number>`count(*)`.as('n'))
          .where('status', '!=', 'processed')
          .executeTakeFirstOrThrow();
        return Number(pending.n) === 0 && Number(undelivered.n) === 0 && Number(unprocessed.n) === 0;
      },
      60_000,
      'every inbox row processed and every delivery succeeded after the restart',
    );

    // Each provider event exactly once: one inbox row, one payment, one payment.succeeded.
    const inbox = await db.selectFrom('provider_events').select(['event_key', 'status']).execute();
    assert.equal(inbox.length, EVENTS);
    assert.ok(
      inbox.every((row) => row.status === 'processed'),
      'every inbox row processed',
    );
    const payments = await db.selectFrom('payments').select(['provider_reference']).execute();
    assert.equal(payments.length, EVENTS);
    assert.equal(new Set(payments.map((p) => p.provider_reference)).size, EVENTS);
    const events = await db.selectFrom('events').select('id').where('topic', '=', 'payment.succeeded').execute();
    assert.equal(events.length, EVENTS);

    // Every committed event reached the receiver at least once (at-least-once: the crash may repeat some).
    const received = new Set(receiver.requests.map((r) => String(r.headers['x-event-id'])));
    for (const event of events) assert.ok(received.has(event.id), `event ${event.id} delivered`);

    // Nothing stuck: no delivery left pending, none still leased.
    const leased = await db
      .selectFrom('webhook_deliveries')
      .select('id')
      .where('locked_until', 'is not', null)
      .where('status', '=', 'pending')
      .execute();
    assert.deepEqual(leased, []);
  },
);
