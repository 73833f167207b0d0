import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createCustomer, createWebhookEndpoint } from '../../test/helpers/factories.ts';
import { RECEIVER_HOST } from '../../test/helpers/webhook-receiver.ts';
import { buildWebhookTestApp, PUBLIC_ADDRESS } from '../../test/helpers/webhooks.ts';

const PUBLIC_URL = 'https://hooks.example.com/billing';

async function setup(t: Parameters<typeof buildWebhookTestApp>[0], env: Record<string, string> = {}) {
  const app = await buildWebhookTestApp(t, { env: { WEBHOOK_ALLOW_PRIVATE_CIDRS: '', ...env } });
  app.dns.set('hooks.example.com', [PUBLIC_ADDRESS]);
  return app;
}

test('create returns the endpoint with has_secret and never the secret', async (t) => {
  const app = await setup(t);
  const res = await app.request('POST', '/api/webhooks', {
    body: { url: PUBLIC_URL, events: ['payment.succeeded', 'payment.failed'], secret: 'sekrit-0123456789' },
  });
  assert.equal(res.status, 201);
  assert.match(res.body.id, /^we_/);
  assert.deepEqual(
    { ...res.body, id: undefined, created_at: undefined, updated_at: undefined },
    {
      id: undefined,
      url: PUBLIC_URL,
      events: ['payment.succeeded', 'payment.failed'],
      has_secret: true,
      status: 'enabled',
      disabled_reason: null,
      created_at: undefined,
      updated_at: undefined,
    },
  );
  assert.ok(!res.text.includes('sekrit'));
  const list = await app.request('GET', '/api/webhooks');
  assert.equal(list.status, 200);
  assert.deepEqual(list.body, { data: [res.body], meta: { total: 1, page: 0, limit: 10 } });
  assert.ok(!list.text.includes('sekrit'));
  const one = await app.request('GET', `/api/webhooks/${res.body.id}`);
  assert.deepEqual(one.body, res.body);
  const noSecret = await createWebhookEndpoint(app, PUBLIC_URL);
  assert.equal(noSecret.has_secret, false);
});

test('each url of the hostile corpus is 400 validation_error naming url', async (t) => {
  const app = await setup(t);
  app.dns.set('example.com', [PUBLIC_ADDRESS]);
  app.dns.set('localhost', ['127.0.0.1']);
  const corpus = [
    'http://example.com/',
    'https://127.0.0.1/',
    'https://localhost/',
    'https://10.1.2.3/',
    'https://[::1]/',
    'https://169.254.169.254/',
    'https://0.0.0.0/',
    'https://2130706433/',
    'https://[::ffff:10.0.0.1]/',
    'https://user:pw@example.com/',
    'not a url',
    'https://0x7f.1/',
    'https://[::127.0.0.1]/',
    'https://[64:ff9b::a00:1]/',
    'https://168.63.129.16/',
    `https://example.com/${'x'.repeat(2048)}`,
  ];
  for (const url of corpus) {
    const res = await app.request('POST', '/api/webhooks', { body: { url, events: ['*'] } });
    assert.equal(res.status, 400, url);
    assert.equal(res.body.code, 'validation_error', url);
    assert.deepEqual(
      res.body.errors.map((e: { name: string }) => e.name),
      ['url'],
      url,
    );
    assert.match(res.body.message, /^url /, url);
  }
  assert.equal((await app.request('GET', '/api/webhooks')).body.meta.total, 0);
});

test('a NUL character in url or secret is 400, not a 500 from PostgreSQL text', async (t) => {
  const app = await setup(t);
  for (const body of [
    { url: `${PUBLIC_URL}/a\u0000b`, events: ['*'] },
    { url: PUBLIC_URL, events: ['*'], secret: 'sekrit-\u0000-0123456789' },
  ]) {
    const res = await app.request('POST', '/api/webhooks', { body });
    assert.equal(res.status, 400, res.text);
    assert.equal(res.body.code, 'validation_error');
  }
  // An escaped backslash followed by the letters u0000 is no NUL, and is accepted.
  const literal = await app.request('POST', '/api/webhooks', {
    body: { url: PUBLIC_URL, events: ['*'], secret: 'sekrit-\\u0000-0123456789' },
  });
  assert.equal(literal.status, 201, literal.text);
  assert.equal((await app.request('GET', '/api/webhooks')).body.meta.total, 1);
});

test('a name is checked through DNS: any private address rejects it', async (t) => {
  const app = await setup(t);
  app.dns.set('internal.example.com', ['10.0.0.7']);
  app.dns.set('half.example.com', [PUBLIC_ADDRESS, 'fd00::1']);
  for (const url of ['https://internal.example.com/', 'https://half.example.com/', 'https://nxdomain.example.com/']) {
    const res = await app.request('POST', '/api/webhooks', { body: { url, events: ['*'] } });
    assert.equal(res.status, 400, url);
    assert.equal(res.body.errors[0].name, 'url');
  }
});

test('events: empty, unknown, duplicated or not an array is 400 naming events', async (t) => {
  const app = await setup(t);
  const cases: [unknown, RegExp][] = [
    [[], /events must not be empty/],
    [['payment.exploded'], /unknown topic "payment\.exploded"/],
    [['payment.succeeded', 'payment.succeeded'], /duplicates/],
    ['payment.succeeded', /events must be an array/],
    [{ topic: 'payment.succeeded' }, /events must be an array/],
    [[42], /events must contain only topic names/],
  ];
  for (const [events, message] of cases) {
    const res = await app.request('POST', '/api/webhooks', { body: { url: PUBLIC_URL, events } });
    assert.equal(res.status, 400, JSON.stringify(events));
    assert.equal(res.body.code, 'validation_error');
    assert.deepEqual(
      res.body.errors.map((e: { name: string }) => e.name),
      ['events'],
      JSON.stringify(events),
    );
    assert.match(res.body.message, message);
  }
  const missing = await app.request('POST', '/api/webhooks', { body: { url: PUBLIC_URL } });
  assert.equal(missing.status, 400);
  assert.equal(missing.body.message, 'Events is required');
  const all = await app.request('POST', '/api/webhooks', { body: { url: PUBLIC_URL, events: ['*'] } });
  assert.equal(all.status, 201);
});

test('WEBHOOK_ALLOW_PRIVATE_CIDRS lets a private receiver in, over http too', async (t) => {
  const app = await setup(t, { WEBHOOK_ALLOW_PRIVATE_CIDRS: '127.0.0.1/32' });
  assert.equal(
    (await app.request('POST', '/api/webhooks', { body: { url: 'https://127.0.0.1:9/', events: ['*'] } })).status,
    201,
  );
  assert.equal(
    (await app.request('POST', '/api/webhooks', { body: { url: `http://${RECEIVER_HOST}:9/`, events: ['*'] } })).status,
    201,
  );
  assert.equal(
    (await app.request('POST', '/api/webhooks', { body: { url: 'https://127.0.0.2/', events: ['*'] } })).status,
    400,
  );
});

test('patch changes url, events, secret and status; a bad url or events is 400', async (t) => {
  const app = await setup(t);
  app.dns.set('other.example.com', [PUBLIC_ADDRESS]);
  const endpoint = await createWebhookEndpoint(app, PUBLIC_URL, { secret: 'first-secret' });
  app.clock.advance(1000);
  const patched = await app.request('PATCH', `/api/webhooks/${endpoint.id}`, {
    body: { url: 'https://other.example.com/hook', events: ['customer.created'], secret: null },
  });
  assert.equal(patched.status, 200);
  assert.equal(patched.body.url, 'https://other.example.com/hook');
  assert.deepEqual(patched.body.events, ['customer.created']);
  assert.equal(patched.body.has_secret, false);
  assert.notEqual(patched.body.updated_at, endpoint.updated_at);
  const withSecret = await app.request('PATCH', `/api/webhooks/${endpoint.id}`, { body: { secret: 'second' } });
  assert.equal(withSecret.body.has_secret, true);

  for (const body of [{ url: 'https://10.0.0.1/' }, { events: [] }, { status: 'paused' }, { secret: '' }]) {
    const res = await app.request('PATCH', `/api/webhooks/${endpoint.id}`, { body });
    assert.equal(res.status, 400, JSON.stringify(body));
    assert.equal(res.body.errors[0].name, Object.keys(body)[0]);
  }
  assert.deepEqual((await app.request('GET', `/api/webhooks/${endpoint.id}`)).body, withSecret.body);
});

test('disabling by PATCH emits webhook_endpoint.disabled once; enabling clears the reason', async (t) => {
  const app = await setup(t);
  const endpoint = await createWebhookEndpoint(app, PUBLIC_URL);
  const disabled = await app.request('PATCH', `/api/webhooks/${endpoint.id}`, { body: { status: 'disabled' } });
  assert.equal(disabled.status, 200);
  assert.equal(disabled.body.status, 'disabled');
  assert.equal(disabled.body.disabled_reason, 'manual');
  await app.request('PATCH', `/api/webhooks/${endpoint.id}`, { body: { status: 'disabled' } });
  const events = await app.request('GET', '/api/events?topic=webhook_endpoint.disabled');
  assert.equal(events.body.meta.total, 1);
  assert.deepEqual(events.body.data[0].data, disabled.body);
  const enabled = await app.request('PATCH', `/api/webhooks/${endpoint.id}`, { body: { status: 'enabled' } });
  assert.equal(enabled.body.status, 'enabled');
  assert.equal(enabled.body.disabled_reason, null);
});

test('delete is 204, then the endpoint is 404; unknown and malformed ids are 404', async (t) => {
  const app = await setup(t);
  const endpoint = await createWebhookEndpoint(app, PUBLIC_URL);
  assert.equal((await app.request('DELETE', `/api/webhooks/${endpoint.id}`)).status, 204);
  for (const path of [
    `/api/webhooks/${endpoint.id}`,
    '/api/webhooks/we_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
    '/api/webhooks/bogus',
    `/api/webhooks/${endpoint.id}/deliveries`,
  ]) {
    const res = await app.request('GET', path);
    assert.equal(res.status, 404, path);
    assert.equal(res.body.code, 'not_found');
  }
  assert.equal((await app.request('DELETE', `/api/webhooks/${endpoint.id}`)).status, 404);
  assert.equal(
    (await app.request('PATCH', `/api/webhooks/${endpoint.id}`, { body: { status: 'disabled' } })).status,
    404,
  );
  assert.equal((await app.request('POST', `/api/webhooks/${endpoint.id}/test`)).status, 404);
  assert.equal(
    (await app.request('POST', `/api/webhooks/${endpoint.id}/deliveries/del_01JD3Q7Z8X9Y0A1B2C3D4E5F6G/retry`)).status,
    404,
  );
});

test('the list filters on status and rejects unknown sort fields', async (t) => {
  const app = await setup(t);
  const a = await createWebhookEndpoint(app, PUBLIC_URL);
  app.clock.advance(1);
  await createWebhookEndpoint(app, PUBLIC_URL);
  await app.request('PATCH', `/api/webhooks/${a.id}`, { body: { status: 'disabled' } });
  assert.equal((await app.request('GET', '/api/webhooks?status=disabled')).body.meta.total, 1);
  assert.equal((await app.request('GET', '/api/webhooks?status=enabled')).body.meta.total, 1);
  assert.equal((await app.request('GET', '/api/webhooks?sort_by=secret')).status, 400);
  const asc = await app.request('GET', '/api/webhooks?sort_order=asc');
  assert.equal(asc.body.data[0].id, a.id);
});

test('a read key may list but not create; no key is 401', async (t) => {
  const app = await setup(t);
  const key = await app.request('POST', '/api/api-keys', { body: { name: 'reader', scope: 'read' } });
  const reader = key.body.key as string;
  assert.equal((await app.request('GET', '/api/webhooks', { key: reader })).status, 200);
  const denied = await app.request('POST', '/api/webhooks', { key: reader, body: { url: PUBLIC_URL, events: ['*'] } });
  assert.equal(denied.status, 403);
  assert.equal((await app.request('GET', '/api/webhooks', { key: null })).status, 401);
});

test('test and retry of a disabled endpoint are 422; the test event reaches the deliveries list', async (t) => {
  const app = await setup(t);
  const endpoint = await createWebhookEndpoint(app, PUBLIC_URL);
  const sent = await app.request('POST', `/api/webhooks/${endpoint.id}/test`, {
    headers: { 'content-type': 'application/json' },
  });
  assert.equal(sent.status, 202);
  assert.equal(sent.body.topic, 'webhook.test');
  assert.equal(sent.body.status, 'pending');
  assert.deepEqual(sent.body.attempts, []);
  const deliveries = await app.request('GET', `/api/webhooks/${endpoint.id}/deliveries`);
  assert.deepEqual(deliveries.body.data, [sent.body]);
  await app.request('PATCH', `/api/webhooks/${endpoint.id}`, { body: { status: 'disabled' } });
  const refused = await app.request('POST', `/api/webhooks/${endpoint.id}/test`);
  assert.equal(refused.status, 422);
  assert.equal(refused.body.code, 'invalid_state');
  const retry = await app.request('POST', `/api/webhooks/${endpoint.id}/deliveries/${sent.body.id}/retry`);
  assert.equal(retry.status, 422);
  await createCustomer(app);
});
