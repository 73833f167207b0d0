// /api/api-keys over HTTP (SPEC §2 authentication and scopes, §3 api-keys routes): keys are
// shown once, stored as hashes, scoped, revocable, expiring and rotatable with a grace period.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ADMIN_KEY, buildTestApp, type TestApp } from '../../test/helpers/app.ts';
import { hashKey } from '../modules/api-keys/api-keys.keys.ts';

const UNAUTHORIZED = '{"code":"authentication_error","message":"unauthorized","details":null}';
const HOUR = 3_600_000;
const DAY = 24 * HOUR;

interface CreatedKey {
  id: string;
  key: string;
  scope: string;
  expires_at: string | null;
}

async function createKey(testApp: TestApp, body: Record<string, unknown> = { name: 'test key' }): Promise<CreatedKey> {
  const res = await testApp.request<CreatedKey>('POST', '/api/api-keys', { body });
  assert.equal(res.status, 201, res.text);
  return res.body;
}

/** Status of a read request made with `key` (Bearer). */
async function statusWith(testApp: TestApp, key: string): Promise<number> {
  return (await testApp.request('GET', '/api/customers', { key })).status;
}

describe('POST /api/api-keys', () => {
  test('create is 201 and returns the secret key once, beside its prefix and last 4 characters', async (t) => {
    const testApp = await buildTestApp(t);
    const res = await testApp.request('POST', '/api/api-keys', {
      body: { name: 'billing job', scope: 'read' },
    });
    assert.equal(res.status, 201);
    const { key, ...view } = res.body;
    assert.equal(typeof key, 'string');
    assert.ok(key.length >= 32, 'the key carries enough entropy');
    assert.match(view.id, /^key_[0-9A-Z]{26}$/);
    assert.equal(view.name, 'billing job');
    assert.equal(view.scope, 'read');
    assert.ok(key.startsWith(view.prefix) && view.prefix.length > 0 && view.prefix.length < key.length / 2);
    assert.equal(view.last4, key.slice(-4));
    assert.equal(view.created_at, testApp.clock.now().toISOString());
    assert.equal(view.expires_at, null);
    assert.equal(view.revoked_at, null);
    assert.equal(view.last_used_at, null);
    assert.ok(!res.text.includes(hashKey(key)), 'the hash is never returned');
    assert.ok(!('key_hash' in view));
  });

  test('the key is stored only as its SHA-256 hash', async (t) => {
    const testApp = await buildTestApp(t);
    const { id, key } = await createKey(testApp);
    const row = await testApp.deps.db.selectFrom('api_keys').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    assert.equal(row.key_hash, hashKey(key));
    assert.ok(!Object.values(row).includes(key), 'no column holds the secret');
  });

  test('GET one and the list never show the key or its hash', async (t) => {
    const testApp = await buildTestApp(t);
    const { id, key } = await createKey(testApp);
    const one = await testApp.request('GET', `/api/api-keys/${id}`);
    assert.equal(one.status, 200);
    assert.equal(one.body.id, id);
    assert.ok(!('key' in one.body));
    const list = await testApp.request('GET', '/api/api-keys');
    assert.equal(list.status, 200);
    assert.deepEqual(
      list.body.data.map((k: { id: string }) => k.id),
      [id],
    );
    assert.deepEqual(list.body.meta, { total: 1, page: 0, limit: 10 });
    for (const res of [one, list]) {
      assert.ok(!res.text.includes(key), 'the secret is shown only at creation');
      assert.ok(!res.text.includes(hashKey(key)));
      assert.ok(!res.text.includes('key_hash'));
    }
  });

  test('the default scope is write', async (t) => {
    const testApp = await buildTestApp(t);
    const created = await createKey(testApp, { name: 'no scope given' });
    assert.equal(created.scope, 'write');
    assert.equal((await testApp.request('POST', '/api/customers', { key: created.key, body: {} })).status, 400);
  });

  test('a missing name is 400 "Name is required"', async (t) => {
    const testApp = await buildTestApp(t);
    const res = await testApp.request('POST', '/api/api-keys', { body: { scope: 'read' } });
    assert.equal(res.status, 400);
    assert.equal(res.body.code, 'validation_error');
    assert.equal(res.body.message, 'Name is required');
    assert.deepEqual(res.body.errors, [{ name: 'name', reason: 'Name is required' }]);
  });

  test('an unknown scope is 400 naming scope', async (t) => {
    const testApp = await buildTestApp(t);
    const res = await testApp.request('POST', '/api/api-keys', { body: { name: 'x', scope: 'superuser' } });
    assert.equal(res.status, 400);
    assert.equal(res.body.code, 'validation_error');
    assert.equal(res.body.errors[0].name, 'scope');
  });

  test('an expires_at in the past is 400 naming expires_at', async (t) => {
    const testApp = await buildTestApp(t);
    const past = new Date(testApp.clock.now().getTime() - 1000).toISOString();
    const res = await testApp.request('POST', '/api/api-keys', { body: { name: 'x', expires_at: past } });
    assert.equal(res.status, 400);
    assert.equal(res.body.code, 'validation_error');
    assert.equal(res.body.errors[0].name, 'expires_at');
    assert.equal(res.body.title, 'Bad Request', 'the two-shape 400 body (SPEC §2)');
    const garbage = await testApp.request('POST', '/api/api-keys', {
      body: { name: 'x', expires_at: 'tomorrow' },
    });
    assert.equal(garbage.status, 400);
    assert.equal((await testApp.request('GET', '/api/api-keys')).body.meta.total, 0, 'nothing was stored');
  });

  test('an expires_at past 9999-12-31T23:59:59.999Z (or before 1970) is 400 validation_error naming expires_at', async (t) => {
    const testApp = await buildTestApp(t);
    for (const expiresAt of [
      '10000-01-01T00:00:00.000Z',
      '+010000-01-01T00:00:00.000Z',
      // In range as written, in year 10000 once converted to UTC.
      '9999-12-31T23:00:00.000-05:00',
      '1969-12-31T23:59:59.999Z',
    ]) {
      const res = await testApp.request('POST', '/api/api-keys', { body: { name: 'x', expires_at: expiresAt } });
      assert.equal(res.status, 400, expiresAt);
      assert.equal(res.body.code, 'validation_error');
      assert.equal(res.body.errors[0]?.name, 'expires_at', expiresAt);
      assert.doesNotMatch(res.body.message, /format|#\//, 'a sentence, not validator internals');
    }
    const late = await testApp.request('POST', '/api/api-keys', {
      body: { name: 'x', expires_at: '9999-12-31T23:00:00.000-05:00' },
    });
    assert.equal(late.body.message, 'expires_at must be no later than 9999-12-31T23:59:59.999Z');
    assert.equal((await testApp.request('GET', '/api/api-keys')).body.meta.total, 0, 'nothing was stored');
    const last = await createKey(testApp, { name: 'x', expires_at: '9999-12-31T23:59:59.999Z' });
    assert.equal(last.expires_at, '9999-12-31T23:59:59.999Z', 'the last instant of 9999 is accepted');
  });
});

describe('authenticating with a created key', () => {
  test('a created key works as Authorization: Bearer and as x-api-key', async (t) => {
    const testApp = await buildTestApp(t);
    const { key } = await createKey(testApp, { name: 'r', scope: 'read' });
    const bearer = await testApp.request('GET', '/api/customers', {
      headers: { authorization: `Bearer ${key}` },
    });
    assert.equal(bearer.status, 200);
    const header = await testApp.request('GET', '/api/customers', {
      key: null,
      headers: { 'x-api-key': key },
    });
    assert.equal(header.status, 200);
  });

  test('a key in the query string is never accepted', async (t) => {
    const testApp = await buildTestApp(t);
    const { key } = await createKey(testApp, { name: 'r', scope: 'admin' });
    for (const name of ['api_key', 'apiKey', 'key', 'access_token']) {
      const res = await testApp.request('GET', `/api/customers?${name}=${key}`, { key: null });
      assert.equal(res.status, 401, name);
      assert.equal(res.text, UNAUTHORIZED);
    }
    const bootstrap = await testApp.request('GET', `/api/customers?api_key=${ADMIN_KEY}`, { key: null });
    assert.equal(bootstrap.status, 401);
  });

  test('a read key can GET but gets 403 permission_error on POST /api/customers', async (t) => {
    const testApp = await buildTestApp(t);
    const { key } = await createKey(testApp, { name: 'r', scope: 'read' });
    assert.equal((await testApp.request('GET', '/api/customers', { key })).status, 200);
    const res = await testApp.request('POST', '/api/customers', { key, body: { email: 'a@example.com' } });
    assert.equal(res.status, 403);
    assert.equal(res.body.code, 'permission_error');
    const list = await testApp.request('GET', '/api/customers');
    assert.equal(list.body.meta.total, 0, 'the refused request changed nothing');
  });

  test('a write key gets 403 permission_error on /api/api-keys', async (t) => {
    const testApp = await buildTestApp(t);
    const { id, key } = await createKey(testApp, { name: 'w', scope: 'write' });
    const attempts = [
      await testApp.request('GET', '/api/api-keys', { key }),
      await testApp.request('POST', '/api/api-keys', { key, body: { name: 'escalate', scope: 'admin' } }),
      await testApp.request('GET', `/api/api-keys/${id}`, { key }),
      await testApp.request('DELETE', `/api/api-keys/${id}`, { key }),
      await testApp.request('POST', `/api/api-keys/${id}/rotate`, { key, body: {} }),
    ];
    for (const res of attempts) {
      assert.equal(res.status, 403, res.text);
      assert.equal(res.body.code, 'permission_error');
    }
    assert.equal((await testApp.request('GET', '/api/api-keys')).body.meta.total, 1, 'no key was created');
    assert.equal(await statusWith(testApp, key), 200, 'the key was neither revoked nor rotated');
  });

  test('an admin key created through the API can manage keys', async (t) => {
    const testApp = await buildTestApp(t);
    const { key } = await createKey(testApp, { name: 'a', scope: 'admin' });
    assert.equal((await testApp.request('GET', '/api/api-keys', { key })).status, 200);
  });
});

describe('DELETE /api/api-keys/{id}', () => {
  test('revoke is 200 with revoked_at and the key then gets the exact 401 body', async (t) => {
    const testApp = await buildTestApp(t);
    const { id, key } = await createKey(testApp);
    assert.equal(await statusWith(testApp, key), 200);
    testApp.clock.advance(1000);
    const res = await testApp.request('DELETE', `/api/api-keys/${id}`);
    assert.equal(res.status, 200);
    assert.equal(res.body.id, id);
    assert.equal(res.body.revoked_at, testApp.clock.now().toISOString());
    assert.ok(!res.text.includes(key));
    const presentations: Record<string, string>[] = [{ authorization: `Bearer ${key}` }, { 'x-api-key': key }];
    for (const headers of presentations) {
      const after = await testApp.request('GET', '/api/customers', { key: null, headers });
      assert.equal(after.status, 401);
      assert.equal(after.text, UNAUTHORIZED);
    }
    const listed = await testApp.request('GET', `/api/api-keys/${id}`);
    assert.equal(listed.body.revoked_at, res.body.revoked_at, 'the record stays, with revoked_at');
  });

  test('revoking twice keeps the first revoked_at', async (t) => {
    const testApp = await buildTestApp(t);
    const { id } = await createKey(testApp);
    const first = await testApp.request('DELETE', `/api/api-keys/${id}`);
    testApp.clock.advance(HOUR);
    const second = await testApp.request('DELETE', `/api/api-keys/${id}`);
    assert.equal(second.status, 200);
    assert.equal(second.body.revoked_at, first.body.revoked_at);
  });
});

describe('expiry', () => {
  test('a key stops working once its expires_at has passed', async (t) => {
    const testApp = await buildTestApp(t);
    const expiresAt = new Date(testApp.clock.now().getTime() + HOUR).toISOString();
    const { key, expires_at } = await createKey(testApp, { name: 'short-lived', expires_at: expiresAt });
    assert.equal(expires_at, expiresAt);
    testApp.clock.advance(HOUR - 1);
    assert.equal(await statusWith(testApp, key), 200, 'still valid just before expiry');
    testApp.clock.advance(1);
    const res = await testApp.request('GET', '/api/customers', { key });
    assert.equal(res.status, 401);
    assert.equal(res.text, UNAUTHORIZED);
  });
});

describe('POST /api/api-keys/{id}/rotate', () => {
  test('rotate issues a new key; the old one works within the grace and fails after it', async (t) => {
    const testApp = await buildTestApp(t);
    const old = await createKey(testApp, { name: 'deploy', scope: 'read' });
    const res = await testApp.request('POST', `/api/api-keys/${old.id}/rotate`, { body: { grace: '1h' } });
    assert.equal(res.status, 201);
    const fresh = res.body as CreatedKey & { name: string };
    assert.notEqual(fresh.id, old.id);
    assert.notEqual(fresh.key, old.key);
    assert.equal(fresh.name, 'deploy');
    assert.equal(fresh.scope, 'read', 'the new key keeps the scope');
    assert.equal(await statusWith(testApp, fresh.key), 200);
    assert.equal(await statusWith(testApp, old.key), 200, 'the old key still works during the grace');
    const oldView = await testApp.request('GET', `/api/api-keys/${old.id}`);
    assert.equal(oldView.body.expires_at, new Date(testApp.clock.now().getTime() + HOUR).toISOString());

    testApp.clock.advance(HOUR);
    const after = await testApp.request('GET', '/api/customers', { key: old.key });
    assert.equal(after.status, 401);
    assert.equal(after.text, UNAUTHORIZED);
    assert.equal(await statusWith(testApp, fresh.key), 200, 'the new key outlives the grace');
  });

  test('the default grace is 24h', async (t) => {
    const testApp = await buildTestApp(t);
    const old = await createKey(testApp);
    const res = await testApp.request('POST', `/api/api-keys/${old.id}/rotate`);
    assert.equal(res.status, 201);
    testApp.clock.advance(DAY - 1);
    assert.equal(await statusWith(testApp, old.key), 200);
    testApp.clock.advance(1);
    assert.equal(await statusWith(testApp, old.key), 401);
  });

  test('a grace over 7d is 400, and 7d is allowed', async (t) => {
    const testApp = await buildTestApp(t);
    const old = await createKey(testApp);
    for (const grace of ['8d', '169h', 'soon']) {
      const res = await testApp.request('POST', `/api/api-keys/${old.id}/rotate`, { body: { grace } });
      assert.equal(res.status, 400, grace);
      assert.equal(res.body.code, 'validation_error');
      assert.equal(res.body.errors[0].name, 'grace');
    }
    assert.equal((await testApp.request('GET', '/api/api-keys')).body.meta.total, 1, 'no key was issued');
    const ok = await testApp.request('POST', `/api/api-keys/${old.id}/rotate`, { body: { grace: '7d' } });
    assert.equal(ok.status, 201);
  });

  test('rotating a key with an expiry renews it for the same lifetime; the grace never outlives the old expiry', async (t) => {
    const testApp = await buildTestApp(t);
    const createdAt = testApp.clock.now().getTime();
    const old = await createKey(testApp, {
      name: 'contractor',
      expires_at: new Date(createdAt + 30 * DAY).toISOString(),
    });
    testApp.clock.advance(29 * DAY + 23 * HOUR);
    const res = await testApp.request('POST', `/api/api-keys/${old.id}/rotate`, { body: { grace: '24h' } });
    assert.equal(res.status, 201);
    assert.equal(res.body.expires_at, new Date(testApp.clock.now().getTime() + 30 * DAY).toISOString());
    const oldView = await testApp.request('GET', `/api/api-keys/${old.id}`);
    assert.equal(oldView.body.expires_at, new Date(createdAt + 30 * DAY).toISOString(), 'grace ends at the old expiry');
  });

  test('rotating a key that expires at the end of year 9999 issues a working key whose expiry is clamped to it', async (t) => {
    const testApp = await buildTestApp(t);
    const old = await createKey(testApp, { name: 'forever', expires_at: '9999-12-31T23:59:59.999Z' });
    // A day later the same lifetime from now would end in year 10000.
    testApp.clock.advance(DAY);
    const res = await testApp.request('POST', `/api/api-keys/${old.id}/rotate`, { body: { grace: '1s' } });
    assert.equal(res.status, 201, res.text);
    const fresh = res.body as CreatedKey;
    assert.equal(fresh.expires_at, '9999-12-31T23:59:59.999Z', 'the same lifetime from now, clamped');
    const stored = await testApp.request('GET', `/api/api-keys/${fresh.id}`);
    assert.equal(stored.body.expires_at, '9999-12-31T23:59:59.999Z');
    assert.equal(await statusWith(testApp, fresh.key), 200, 'the new key works at once');
    testApp.clock.advance(1000);
    assert.equal(await statusWith(testApp, old.key), 401, 'the old key dies after the grace');
    assert.equal(await statusWith(testApp, fresh.key), 200, 'the new key outlives the grace');
    const list = await testApp.request('GET', '/api/api-keys');
    assert.equal(list.status, 200, 'both keys read back on every database');
  });

  test('rotating a revoked key is 422 invalid_state', async (t) => {
    const testApp = await buildTestApp(t);
    const { id } = await createKey(testApp);
    await testApp.request('DELETE', `/api/api-keys/${id}`);
    const res = await testApp.request('POST', `/api/api-keys/${id}/rotate`, { body: { grace: '1h' } });
    assert.equal(res.status, 422);
    assert.equal(res.body.code, 'invalid_state');
  });
});

describe('unknown ids', () => {
  test('an unknown or malformed key id is 404 not_found on get, revoke and rotate', async (t) => {
    const testApp = await buildTestApp(t);
    for (const id of [
      'key_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
      'nope',
      'cus_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
      'key_%27%20or%201%3D1',
    ]) {
      for (const [method, path] of [
        ['GET', `/api/api-keys/${id}`],
        ['DELETE', `/api/api-keys/${id}`],
        ['POST', `/api/api-keys/${id}/rotate`],
      ] as const) {
        const res = await testApp.request(method, path);
        assert.equal(res.status, 404, `${method} ${path}: ${res.text}`);
        assert.equal(res.body.code, 'not_found');
      }
    }
  });
});

describe('last_used_at', () => {
  test('last_used_at is recorded in batches at flush, not written on each request', async (t) => {
    const testApp = await buildTestApp(t);
    const { id, key } = await createKey(testApp, { name: 'r', scope: 'read' });
    const usedAt = testApp.clock.now().toISOString();
    assert.equal(await statusWith(testApp, key), 200);
    testApp.clock.advance(1000);
    assert.equal(await statusWith(testApp, key), 200);
    const lastUsedAt = async () => (await testApp.request('GET', `/api/api-keys/${id}`)).body.last_used_at;

    assert.equal(await lastUsedAt(), null, 'no write before the flush');
    await testApp.deps.keyUsage.flush();
    const secondUse = new Date(Date.parse(usedAt) + 1000).toISOString();
    assert.equal(await lastUsedAt(), secondUse, 'the latest use is kept');
  });

  test('an older pending use never moves last_used_at backwards', async (t) => {
    const testApp = await buildTestApp(t);
    const { id, key } = await createKey(testApp, { name: 'r', scope: 'read' });
    testApp.clock.advance(HOUR);
    await statusWith(testApp, key);
    await testApp.deps.keyUsage.flush();
    testApp.deps.keyUsage.record(id, new Date(testApp.clock.now().getTime() - DAY).toISOString());
    await testApp.deps.keyUsage.flush();
    const view = await testApp.request('GET', `/api/api-keys/${id}`);
    assert.equal(view.body.last_used_at, testApp.clock.now().toISOString());
  });
});
