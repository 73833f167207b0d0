import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import type { TestContext } from 'node:test';
import { test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { createCustomer, createWebhookEndpoint } from '../../../test/helpers/factories.ts';
import { answer, RECEIVER_HOST, type Receiver, startReceiver } from '../../../test/helpers/webhook-receiver.ts';
import { buildWebhookTestApp, PUBLIC_ADDRESS, type WebhookTestApp } from '../../../test/helpers/webhooks.ts';

const SECRET = 'test-secret-0123456789abcdef';
const SECONDS = 1000;
const DAY = 86_400_000;

function verifier(secret = SECRET) {
  return new Webhook(Buffer.from(secret, 'utf8'), { format: 'raw' });
}

async function deliveriesOf(app: WebhookTestApp, endpointId: string, query = '') {
  const res = await app.request('GET', `/api/webhooks/${endpointId}/deliveries${query}`);
  assert.equal(res.status, 200, res.text);
  return res.body.data;
}

async function eventOf(app: WebhookTestApp, topic: string) {
  const res = await app.request('GET', `/api/events?topic=${topic}`);
  assert.equal(res.body.meta.total, 1, `one ${topic} event`);
  return res.body.data[0];
}

async function setup(t: TestContext, env: Record<string, string> = {}) {
  return buildWebhookTestApp(t, { env: { WEBHOOK_RETRY_SCHEDULE: '5s,5m,30m', ...env } });
}

test('a signed delivery: exact body, every header, verified by standardwebhooks and a recomputed HMAC', async (t) => {
  const app = await setup(t);
  const receiver = await startReceiver(t);
  const endpoint = await createWebhookEndpoint(app, receiver.url, { secret: SECRET });
  const customer = await createCustomer(app);
  await app.dispatcher.runUntilIdle();

  assert.equal(receiver.requests.length, 1);
  const [request] = receiver.requests;
  const event = await eventOf(app, 'customer.created');
  assert.equal(request!.method, 'POST');
  assert.equal(request!.path, '/hook');
  assert.equal(request!.body, JSON.stringify({ topic: 'customer.created', data: customer }));
  const headers = request!.headers;
  assert.equal(headers['content-type'], 'application/json');
  assert.match(String(headers['user-agent']), /^billing-api-webhooks\/\d/);
  assert.equal(headers['x-event-id'], event.id);
  assert.equal(headers['x-timestamp'], app.clock.now().toISOString());
  assert.equal(headers['x-signature'], createHmac('sha256', SECRET).update(request!.body).digest('hex'));
  assert.equal(headers['webhook-id'], event.id);
  assert.equal(headers['webhook-timestamp'], String(Math.floor(app.clock.now().getTime() / 1000)));
  assert.deepEqual(verifier().verify(request!.body, headers as Record<string, string>), {
    topic: 'customer.created',
    data: customer,
  });

  const [delivery] = await deliveriesOf(app, endpoint.id);
  assert.equal(delivery.status, 'succeeded');
  assert.equal(delivery.event_id, event.id);
  assert.equal(delivery.attempt_count, 1);
  assert.equal(delivery.next_attempt_at, null);
  assert.equal(delivery.delivered_at, app.clock.now().toISOString());
  assert.equal(delivery.attempts.length, 1);
  assert.deepEqual(
    { ...delivery.attempts[0], duration_ms: 0 },
    {
      number: 1,
      attempted_at: app.clock.now().toISOString(),
      status_code: 200,
      duration_ms: 0,
      response_body: 'ok',
      error: null,
    },
  );
  const delivered = await app.request('GET', `/api/events/${event.id}`);
  assert.equal(delivered.body.delivered, true);
});

test('without a secret a delivery carries no signature, but X-Event-Id and X-Timestamp', async (t) => {
  const app = await setup(t);
  const receiver = await startReceiver(t);
  await createWebhookEndpoint(app, receiver.url);
  await createCustomer(app);
  await app.dispatcher.runUntilIdle();
  const { headers } = receiver.requests[0]!;
  assert.match(String(headers['x-event-id']), /^evt_/);
  assert.equal(headers['x-timestamp'], app.clock.now().toISOString());
  for (const name of ['x-signature', 'webhook-id', 'webhook-timestamp', 'webhook-signature']) {
    assert.equal(headers[name], undefined, name);
  }
});

test('a failed delivery is retried on the schedule with the same event id, re-signed each time', async (t) => {
  const app = await setup(t);
  const receiver = await startReceiver(t, answer(500, 'down'));
  const endpoint = await createWebhookEndpoint(app, receiver.url, { secret: SECRET });
  await createCustomer(app);
  await app.dispatcher.runUntilIdle();
  assert.equal(receiver.requests.length, 1);
  let [delivery] = await deliveriesOf(app, endpoint.id);
  assert.equal(delivery.status, 'pending');
  assert.equal(delivery.next_attempt_at, new Date(app.clock.now().getTime() + 5 * SECONDS).toISOString());

  app.clock.advance(5 * SECONDS - 1);
  await app.dispatcher.runUntilIdle();
  assert.equal(receiver.requests.length, 1, 'not before the scheduled delay');
  app.clock.advance(1);
  receiver.behave(answer(200));
  await app.dispatcher.runUntilIdle();
  assert.equal(receiver.requests.length, 2);

  const [first, second] = receiver.requests;
  assert.equal(first!.headers['x-event-id'], second!.headers['x-event-id']);
  assert.equal(first!.headers['webhook-id'], second!.headers['webhook-id']);
  assert.equal(first!.body, second!.body);
  assert.notEqual(first!.headers['x-timestamp'], second!.headers['x-timestamp']);
  assert.equal(Number(second!.headers['webhook-timestamp']) - Number(first!.headers['webhook-timestamp']), 5);
  for (const request of [first!, second!]) verifier().verify(request.body, request.headers as Record<string, string>);

  [delivery] = await deliveriesOf(app, endpoint.id);
  assert.equal(delivery.status, 'succeeded');
  assert.deepEqual(
    delivery.attempts.map((a: { number: number; status_code: number; response_body: string }) => [
      a.number,
      a.status_code,
      a.response_body,
    ]),
    [
      [1, 500, 'down'],
      [2, 200, null],
    ],
  );
});

test('retries follow the whole schedule, then the delivery fails for good', async (t) => {
  const app = await setup(t, { WEBHOOK_RETRY_SCHEDULE: '5s,5m' });
  const receiver = await startReceiver(t, answer(503));
  const endpoint = await createWebhookEndpoint(app, receiver.url);
  await createCustomer(app);
  await app.dispatcher.runUntilIdle();
  app.clock.advance(5 * SECONDS);
  await app.dispatcher.runUntilIdle();
  app.clock.advance(5 * 60 * SECONDS);
  await app.dispatcher.runUntilIdle();
  app.clock.advance(DAY);
  await app.dispatcher.runUntilIdle();
  assert.equal(receiver.requests.length, 3);
  const [delivery] = await deliveriesOf(app, endpoint.id);
  assert.equal(delivery.status, 'failed');
  assert.equal(delivery.next_attempt_at, null);
  assert.equal(delivery.attempts.length, 3);
  assert.equal((await eventOf(app, 'customer.created')).delivered, false);
});

test('jitter moves the next attempt by up to ±10%', async (t) => {
  const app = await buildWebhookTestApp(t, {
    env: { WEBHOOK_RETRY_SCHEDULE: '100s' },
    dispatcher: { random: () => 0 },
  });
  const receiver = await startReceiver(t, answer(500));
  const endpoint = await createWebhookEndpoint(app, receiver.url);
  await createCustomer(app);
  await app.dispatcher.runUntilIdle();
  const [delivery] = await deliveriesOf(app, endpoint.id);
  assert.equal(delivery.next_attempt_at, new Date(app.clock.now().getTime() + 90 * SECONDS).toISOString());
});

test('a Retry-After longer than the scheduled delay is honoured', async (t) => {
  const app = await setup(t);
  const receiver = await startReceiver(t, answer(429, '', { 'retry-after': '60' }));
  const endpoint = await createWebhookEndpoint(app, receiver.url);
  await createCustomer(app);
  await app.dispatcher.runUntilIdle();
  const [delivery] = await deliveriesOf(app, endpoint.id);
  assert.equal(delivery.next_attempt_at, new Date(app.clock.now().getTime() + 60 * SECONDS).toISOString());
  app.clock.advance(5 * SECONDS);
  await app.dispatcher.runUntilIdle();
  assert.equal(receiver.requests.length, 1, 'the 5 s of the schedule are not enough');
});

test('410 Gone disables the endpoint at once and emits webhook_endpoint.disabled', async (t) => {
  const app = await setup(t);
  const gone = await startReceiver(t, answer(410));
  const watcher = await startReceiver(t);
  const endpoint = await createWebhookEndpoint(app, gone.url, { events: ['customer.created'] });
  await createWebhookEndpoint(app, watcher.url, { events: ['webhook_endpoint.disabled'] });
  await createCustomer(app);
  await app.dispatcher.runUntilIdle();

  const after = (await app.request('GET', `/api/webhooks/${endpoint.id}`)).body;
  assert.equal(after.status, 'disabled');
  assert.equal(after.disabled_reason, 'gone');
  const [delivery] = await deliveriesOf(app, endpoint.id);
  assert.equal(delivery.status, 'failed');
  assert.equal(delivery.attempts[0].status_code, 410);
  assert.equal(watcher.requests.length, 1);
  assert.deepEqual(JSON.parse(watcher.requests[0]!.body), { topic: 'webhook_endpoint.disabled', data: after });

  await createCustomer(app);
  app.clock.advance(DAY);
  await app.dispatcher.runUntilIdle();
  assert.equal(gone.requests.length, 1, 'a disabled endpoint gets nothing more');
  assert.equal((await deliveriesOf(app, endpoint.id)).length, 1, 'nor new deliveries');
});

test("a disabled endpoint's pending deliveries wait, and go out when it is enabled again", async (t) => {
  const app = await setup(t);
  const receiver = await startReceiver(t, answer(500));
  const endpoint = await createWebhookEndpoint(app, receiver.url, { events: ['customer.created'] });
  await createCustomer(app);
  await app.dispatcher.runUntilIdle();
  await app.request('PATCH', `/api/webhooks/${endpoint.id}`, { body: { status: 'disabled' } });
  let [delivery] = await deliveriesOf(app, endpoint.id);
  assert.deepEqual([delivery.status, delivery.next_attempt_at], ['pending', null]);
  app.clock.advance(DAY);
  await app.dispatcher.runUntilIdle();
  assert.equal(receiver.requests.length, 1, 'nothing is sent while disabled');

  receiver.behave(answer(200));
  await app.request('PATCH', `/api/webhooks/${endpoint.id}`, { body: { status: 'enabled' } });
  [delivery] = await deliveriesOf(app, endpoint.id);
  assert.equal(delivery.next_attempt_at, app.clock.now().toISOString());
  await app.dispatcher.runUntilIdle();
  assert.equal(receiver.requests.length, 2);
  [delivery] = await deliveriesOf(app, endpoint.id);
  assert.equal(delivery.status, 'succeeded');
});

/** Moves the clock to the earliest pending retry of the endpoint and runs the worker. */
async function runNextRetry(app: WebhookTestApp, endpointId: string): Promise<void> {
  const pending = await deliveriesOf(app, endpointId, '?status=pending&limit=100');
  assert.ok(pending.length > 0, 'a retry is pending');
  const next = Math.min(...pending.map((d: { next_attempt_at: string }) => Date.parse(d.next_attempt_at)));
  app.clock.set(new Date(next));
  await app.dispatcher.runUntilIdle();
}

const HOUR = 3_600_000;
// Retries after 20 h, 41 h, 63 h, 86 h, 110 h, 135 h, 161 h, 188 h, 216 h (no jitter in tests).
const DAILY_RETRIES = { WEBHOOK_RETRY_SCHEDULE: '20h,21h,22h,23h,24h,25h,26h,27h,28h' };

test('after 5 days in which every attempt failed the endpoint is disabled, not before', async (t) => {
  const app = await setup(t, DAILY_RETRIES);
  const receiver = await startReceiver(t, answer(500));
  const endpoint = await createWebhookEndpoint(app, receiver.url, { events: ['customer.created'] });
  const status = async () => (await app.request('GET', `/api/webhooks/${endpoint.id}`)).body;
  await createCustomer(app);
  const start = app.clock.now().getTime();
  await app.dispatcher.runUntilIdle();
  for (;;) {
    await runNextRetry(app, endpoint.id);
    const elapsed = app.clock.now().getTime() - start;
    if (elapsed < 5 * DAY) {
      assert.equal((await status()).status, 'enabled', `${elapsed / HOUR} h`);
      continue;
    }
    assert.equal(elapsed, 135 * HOUR);
    break;
  }
  const after = await status();
  assert.equal(after.status, 'disabled');
  assert.equal(after.disabled_reason, 'failing');
  assert.equal(receiver.requests.length, 7);
  assert.deepEqual((await eventOf(app, 'webhook_endpoint.disabled')).data, after);
});

test('a success within the 5 days starts the count again', async (t) => {
  const app = await setup(t, DAILY_RETRIES);
  // Fails everything but the event of the customer created at 50 h.
  const receiver = await startReceiver(t, (request, res) => {
    res.writeHead(request.body.includes('lucky-') ? 200 : 500).end();
  });
  const endpoint = await createWebhookEndpoint(app, receiver.url, { events: ['customer.created'] });
  const status = async () => (await app.request('GET', `/api/webhooks/${endpoint.id}`)).body.status;
  await createCustomer(app);
  const start = app.clock.now().getTime();
  const hours = () => (app.clock.now().getTime() - start) / HOUR;
  await app.dispatcher.runUntilIdle();
  for (const expected of [20, 41]) {
    await runNextRetry(app, endpoint.id);
    assert.equal(hours(), expected);
  }
  app.clock.set(new Date(start + 50 * HOUR));
  await createCustomer(app, { email: `lucky-${Date.now()}@example.com` });
  await app.dispatcher.runUntilIdle(); // the lucky one succeeds at 50 h
  for (const expected of [63, 86, 110, 135, 161]) {
    await runNextRetry(app, endpoint.id);
    assert.equal(hours(), expected);
    assert.equal(await status(), 'enabled', `${expected} h: failing only since 63 h`);
  }
  await runNextRetry(app, endpoint.id);
  assert.equal(hours(), 188);
  assert.equal(await status(), 'disabled', '188 h: five days of failures since the success');
});

test('POST …/test sends webhook.test to that endpoint only', async (t) => {
  const app = await setup(t);
  const target = await startReceiver(t);
  const bystander = await startReceiver(t);
  const endpoint = await createWebhookEndpoint(app, target.url, { events: ['payment.succeeded'], secret: SECRET });
  await createWebhookEndpoint(app, bystander.url, { events: ['*'] });
  const queued = await app.request('POST', `/api/webhooks/${endpoint.id}/test`);
  assert.equal(queued.status, 202);
  await app.dispatcher.runUntilIdle();
  assert.equal(bystander.requests.length, 0);
  assert.equal(target.requests.length, 1);
  const body = verifier().verify(target.requests[0]!.body, target.requests[0]!.headers as Record<string, string>);
  assert.deepEqual(body, {
    topic: 'webhook.test',
    data: (await app.request('GET', `/api/webhooks/${endpoint.id}`)).body,
  });
  const event = await eventOf(app, 'webhook.test');
  assert.equal(target.requests[0]!.headers['x-event-id'], event.id);
  assert.equal(event.delivered, true);
  const [delivery] = await deliveriesOf(app, endpoint.id);
  assert.equal(delivery.id, queued.body.id);
  assert.equal(delivery.status, 'succeeded');
});

test('redelivery re-sends now with the same event id, after success or after giving up', async (t) => {
  const app = await setup(t, { WEBHOOK_RETRY_SCHEDULE: '5s' });
  const receiver = await startReceiver(t);
  const endpoint = await createWebhookEndpoint(app, receiver.url, { secret: SECRET });
  await createCustomer(app);
  await app.dispatcher.runUntilIdle();
  const [first] = await deliveriesOf(app, endpoint.id);
  app.clock.advance(60 * SECONDS);
  const retry = await app.request('POST', `/api/webhooks/${endpoint.id}/deliveries/${first.id}/retry`);
  assert.equal(retry.status, 202);
  assert.equal(retry.body.status, 'pending');
  assert.equal(retry.body.next_attempt_at, app.clock.now().toISOString());
  await app.dispatcher.runUntilIdle();
  assert.equal(receiver.requests.length, 2);
  assert.equal(receiver.requests[0]!.headers['x-event-id'], receiver.requests[1]!.headers['x-event-id']);
  verifier().verify(receiver.requests[1]!.body, receiver.requests[1]!.headers as Record<string, string>);
  const [again] = await deliveriesOf(app, endpoint.id);
  assert.equal(again.status, 'succeeded');
  assert.equal(again.attempt_count, 2);
  assert.equal(again.delivered_at, first.delivered_at, 'the first success stays the delivery time');

  // A delivery that used up its schedule gets one more attempt.
  receiver.behave(answer(500));
  await createCustomer(app);
  await app.dispatcher.runUntilIdle();
  app.clock.advance(5 * SECONDS);
  await app.dispatcher.runUntilIdle();
  const [failed] = await deliveriesOf(app, endpoint.id, '?status=failed');
  assert.equal(failed.attempt_count, 2);
  receiver.behave(answer(204));
  await app.request('POST', `/api/webhooks/${endpoint.id}/deliveries/${failed.id}/retry`);
  await app.dispatcher.runUntilIdle();
  const [recovered] = await deliveriesOf(app, endpoint.id, `?event_id=${failed.event_id}`);
  assert.equal(recovered.status, 'succeeded');
  assert.equal(recovered.attempt_count, 3);
  const event = await app.request('GET', `/api/events/${failed.event_id}`);
  assert.equal(event.body.delivered, true);

  const elsewhere = await createWebhookEndpoint(app, receiver.url);
  const wrong = await app.request('POST', `/api/webhooks/${elsewhere.id}/deliveries/${failed.id}/retry`);
  assert.equal(wrong.status, 404, 'a delivery is retried through its own endpoint');
});

test('a name that resolved to a public address at creation and a private one at delivery is not contacted', async (t) => {
  const app = await setup(t);
  app.dns.set('rebind.example.com', [PUBLIC_ADDRESS]);
  const endpoint = await createWebhookEndpoint(app, 'https://rebind.example.com/hook');
  app.dns.set('rebind.example.com', ['10.0.0.1']);
  await createCustomer(app);
  await app.dispatcher.runUntilIdle();
  const [delivery] = await deliveriesOf(app, endpoint.id);
  assert.equal(delivery.status, 'pending');
  assert.equal(delivery.attempts[0].status_code, null);
  assert.equal(delivery.attempts[0].error, 'blocked: url must resolve to public addresses only (10.0.0.1 is private)');
});

test('a name is resolved once per connection and the connection goes to that vetted address', async (t) => {
  const app = await setup(t);
  const receiver = await startReceiver(t);
  await createWebhookEndpoint(app, `https://${RECEIVER_HOST}:${receiver.port}/hook`);
  app.lookups.length = 0;
  await createCustomer(app);
  await app.dispatcher.runUntilIdle();
  assert.deepEqual(app.lookups, [RECEIVER_HOST]);
  assert.equal(receiver.requests.length, 1);
  assert.equal(receiver.requests[0]!.headers.host, `${RECEIVER_HOST}:${receiver.port}`);
});

test('a stored url that is no longer acceptable is checked at delivery, IP literals included', async (t) => {
  const app = await setup(t);
  const receiver = await startReceiver(t);
  const endpoint = await createWebhookEndpoint(app, receiver.url);
  // As if the url had been stored under another WEBHOOK_ALLOW_PRIVATE_CIDRS.
  const urls = [
    `https://127.0.0.2:${receiver.port}/hook`,
    `https://[::ffff:127.0.0.2]:${receiver.port}/hook`,
    'https://10.0.0.1:1/',
  ];
  const errors: string[] = [];
  for (const url of urls) {
    await app.deps.db.updateTable('webhook_endpoints').set({ url }).where('id', '=', endpoint.id).execute();
    await createCustomer(app);
    await app.dispatcher.runUntilIdle();
    const [latest] = await deliveriesOf(app, endpoint.id);
    errors.push(latest.attempts[0].error);
  }
  assert.deepEqual(errors, [
    'blocked: url must resolve to public addresses only (127.0.0.2 is loopback)',
    'blocked: url must resolve to public addresses only (::ffff:7f00:2 is loopback (embeds 127.0.0.2))',
    'blocked: url must resolve to public addresses only (10.0.0.1 is private)',
  ]);
  assert.equal(receiver.requests.length, 0);
});

/** A receiver that sends `total` bytes of body (as fast as the client reads); counts what it wrote. */
function hugeBody(total: number, written: { bytes: number }) {
  return (_request: unknown, res: ServerResponse) => {
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': String(total) });
    const chunk = Buffer.alloc(64 * 1024, 'x');
    const pump = () => {
      while (written.bytes < total && !res.destroyed) {
        written.bytes += chunk.length;
        if (!res.write(chunk)) return void res.once('drain', pump);
      }
      if (written.bytes >= total) res.end();
    };
    pump();
  };
}

test('receivers that hang, reset, redirect, answer late or send 50 MB do not hurt the worker', async (t) => {
  const app = await setup(t, { WEBHOOK_TIMEOUT: '400ms' });
  const late: NodeJS.Timeout[] = [];
  t.after(() => late.forEach(clearTimeout));
  const hang = await startReceiver(t, () => {});
  const reset = await startReceiver(t, (_request, res) => res.socket?.destroy());
  const target = await startReceiver(t);
  const redirect = await startReceiver(t, answer(302, '', { location: target.url }));
  const slow = await startReceiver(t, (_request, res) => {
    late.push(setTimeout(() => res.writeHead(200).end('too late'), 1500));
  });
  const written = { bytes: 0 };
  const FIFTY_MB = 50 * 1024 * 1024;
  const huge = await startReceiver(t, hugeBody(FIFTY_MB, written));
  const healthy = await startReceiver(t);
  const receivers: Record<string, Receiver> = { hang, reset, redirect, slow, huge, healthy };
  const endpoints: Record<string, string> = {};
  for (const [name, receiver] of Object.entries(receivers)) {
    endpoints[name] = (await createWebhookEndpoint(app, receiver.url)).id;
  }
  await createCustomer(app);
  await app.dispatcher.runUntilIdle();

  const attempt = async (name: string) => {
    const [delivery] = await deliveriesOf(app, endpoints[name]!);
    assert.equal(delivery.attempts.length, 1, name);
    return { status: delivery.status, ...delivery.attempts[0] };
  };
  const hung = await attempt('hang');
  assert.deepEqual([hung.status, hung.status_code, hung.error], ['pending', null, 'timed out after 400 ms']);
  const wasReset = await attempt('reset');
  assert.equal(wasReset.status_code, null);
  assert.match(wasReset.error, /^connection (reset|closed) by the receiver$/);
  const redirected = await attempt('redirect');
  assert.deepEqual(
    [redirected.status, redirected.status_code, redirected.error],
    ['pending', 302, 'redirects are not followed'],
  );
  assert.equal(target.requests.length, 0, 'the redirect was not followed');
  const tooLate = await attempt('slow');
  assert.deepEqual([tooLate.status, tooLate.status_code, tooLate.error], ['pending', null, 'timed out after 400 ms']);
  const big = await attempt('huge');
  assert.equal(big.status, 'succeeded');
  assert.equal(big.status_code, 200);
  assert.equal(Buffer.byteLength(big.response_body), 1024);
  assert.ok(written.bytes < FIFTY_MB / 2, `only a little of the 50 MB was sent (${written.bytes} bytes)`);
  const fine = await attempt('healthy');
  assert.deepEqual([fine.status, fine.status_code], ['succeeded', 200]);
});

test('a stored response body is cut to 1 KiB at a character boundary', async (t) => {
  const app = await setup(t);
  const receiver = await startReceiver(t, answer(500, `x${'é'.repeat(2000)}`));
  const endpoint = await createWebhookEndpoint(app, receiver.url);
  await createCustomer(app);
  await app.dispatcher.runUntilIdle();
  const [delivery] = await deliveriesOf(app, endpoint.id);
  const body: string = delivery.attempts[0].response_body;
  assert.equal(Buffer.byteLength(body), 1023);
  assert.equal(body, `x${'é'.repeat(511)}`);
});
