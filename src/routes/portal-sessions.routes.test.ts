// POST /api/customers/{id}/portal-sessions (SPEC §16): the link, its validation, its hour.
// Both databases.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import { buildTestApp } from '../../test/helpers/app.ts';
import { createCustomer } from '../../test/helpers/factories.ts';

const create = (app: Awaited<ReturnType<typeof buildTestApp>>, id: string, body?: unknown, key?: string | null) =>
  app.request('POST', `/api/customers/${id}/portal-sessions`, { body, key });

test('a portal link: 201 {id, url, expires_at one hour on, return_url}; only its hash is stored; it opens a session', async (t) => {
  const app = await buildTestApp(t);
  const customer = await createCustomer(app);
  const res = await create(app, customer.id, { return_url: 'https://app.example.com/account?tab=billing' });
  assert.equal(res.status, 201);
  assert.match(res.body.id, /^bps_[0-9A-HJKMNP-TV-Z]{26}$/);
  assert.equal(res.body.expires_at, '2026-01-15T11:00:00.000Z');
  assert.equal(res.body.return_url, 'https://app.example.com/account?tab=billing');
  const url = new URL(res.body.url);
  assert.equal(url.origin, app.deps.config.publicUrl);
  const token = url.pathname.replace('/portal/open/', '');
  assert.match(token, /^[A-Za-z0-9_-]{43}$/);
  const rows = await app.deps.db.selectFrom('portal_sessions').selectAll().execute();
  assert.equal(rows.length, 1);
  assert.equal(rows[0]!.customer_id, customer.id);
  assert.equal(rows[0]!.token_hash, createHash('sha256').update(token).digest('hex'));
  assert.ok(!JSON.stringify(rows).includes(token));

  const opened = await fetch(`${app.baseUrl}${url.pathname}`, { redirect: 'manual' });
  assert.equal(opened.status, 200);
  const cookie = opened.headers.get('set-cookie')!;
  assert.match(cookie, /^portal_session=[A-Za-z0-9_-]{43}; Max-Age=3600; Path=\/portal; HttpOnly; SameSite=Strict$/);
  assert.ok(!cookie.includes(token), 'the cookie is a new token, not the link');
  assert.match(await opened.text(), /<meta http-equiv="refresh" content="0;url=\/portal">/);
  // Without a body: no return_url.
  const bare = await create(app, customer.id);
  assert.equal(bare.status, 201);
  assert.equal(bare.body.return_url, null);
});

test('return_url must be an absolute http(s) URL of at most 2048 characters: 400 and nothing stored', async (t) => {
  const app = await buildTestApp(t);
  const customer = await createCustomer(app);
  for (const return_url of [
    'javascript:alert(1)',
    'ftp://example.com/',
    '/relative/path',
    'https://user:pass@example.com/',
    `https://example.com/${'a'.repeat(2030)}`,
    '',
    'data:text/html,<script>alert(1)</script>',
  ]) {
    const res = await create(app, customer.id, { return_url });
    assert.equal(res.status, 400, return_url.slice(0, 40));
    assert.equal(res.body.code, 'validation_error');
  }
  for (const body of [{ return_url: 42 }, { extra: true }, [1]]) {
    assert.equal((await create(app, customer.id, body)).status, 400, JSON.stringify(body));
  }
  const nul = await create(app, customer.id, { return_url: 'https://example.com/\u0000' });
  assert.equal(nul.status, 400);
  const longest = `https://example.com/${'a'.repeat(2048 - 'https://example.com/'.length)}`;
  assert.equal((await create(app, customer.id, { return_url: longest })).status, 201);
  assert.equal((await app.deps.db.selectFrom('portal_sessions').selectAll().execute()).length, 1);
});

test('unknown, malformed or deleted customers are 404; no API key is 401', async (t) => {
  const app = await buildTestApp(t);
  assert.equal((await create(app, 'cus_01JD3Q7Z8X9Y0A1B2C3D4E5F6G')).status, 404);
  assert.equal((await create(app, 'nope')).status, 404);
  const customer = await createCustomer(app);
  assert.equal((await app.request('DELETE', `/api/customers/${customer.id}`)).status, 204);
  assert.equal((await create(app, customer.id)).status, 404);
  const other = await createCustomer(app);
  const unauthenticated = await create(app, other.id, {}, null);
  assert.equal(unauthenticated.status, 401);
  assert.equal((await app.deps.db.selectFrom('portal_sessions').selectAll().execute()).length, 0);
});

test('the link and its sessions expire after one hour: an "expired" page with the link back, never the portal', async (t) => {
  const app = await buildTestApp(t);
  const customer = await createCustomer(app, { name: 'Ada' });
  const link = (await create(app, customer.id, { return_url: 'https://app.example.com/account' })).body;
  const path = new URL(link.url).pathname;
  const opened = await fetch(app.baseUrl + path, { redirect: 'manual' });
  const cookie = opened.headers.get('set-cookie')!.split(';')[0]!;
  const home = await fetch(`${app.baseUrl}/portal`, { headers: { cookie } });
  assert.equal(home.status, 200);
  assert.match(await home.text(), /Ada/);

  app.clock.advance(60 * 60_000 - 1);
  assert.equal((await fetch(`${app.baseUrl}/portal`, { headers: { cookie } })).status, 200);
  app.clock.advance(1);
  for (const res of [
    await fetch(`${app.baseUrl}/portal`, { headers: { cookie } }),
    await fetch(app.baseUrl + path, { redirect: 'manual' }),
  ]) {
    assert.equal(res.status, 410);
    assert.equal(res.headers.get('set-cookie'), null);
    const html = await res.text();
    assert.match(html, /This link has expired/);
    assert.match(html, /<a href="https:\/\/app\.example\.com\/account" rel="noreferrer">Back<\/a>/);
    assert.ok(!html.includes('Ada'));
  }
});

test('a session ends when its customer is deleted; a forged or malformed cookie is the unknown page', async (t) => {
  const app = await buildTestApp(t);
  const customer = await createCustomer(app, { name: 'Grace' });
  const link = (await create(app, customer.id)).body;
  const opened = await fetch(app.baseUrl + new URL(link.url).pathname, { redirect: 'manual' });
  const cookie = opened.headers.get('set-cookie')!.split(';')[0]!;
  assert.equal((await fetch(`${app.baseUrl}/portal`, { headers: { cookie } })).status, 200);
  for (const forged of [
    'portal_session=' + 'A'.repeat(43),
    'portal_session=%00',
    'portal_session=' + 'x'.repeat(5000),
    '',
  ]) {
    const res = await fetch(`${app.baseUrl}/portal`, { headers: { cookie: forged } });
    assert.equal(res.status, 404, forged.slice(0, 30));
    assert.ok(!(await res.text()).includes('Grace'));
  }
  assert.equal((await app.request('DELETE', `/api/customers/${customer.id}`)).status, 204);
  const after = await fetch(`${app.baseUrl}/portal`, { headers: { cookie } });
  assert.equal(after.status, 404);
  assert.ok(!(await after.text()).includes('Grace'));
  assert.equal((await fetch(app.baseUrl + new URL(link.url).pathname, { redirect: 'manual' })).status, 404);
  // Unknown and malformed link tokens: the same page.
  for (const token of ['A'.repeat(43), 'short', '%00', 'é'.repeat(43)]) {
    assert.equal((await fetch(`${app.baseUrl}/portal/open/${token}`, { redirect: 'manual' })).status, 404, token);
  }
});
