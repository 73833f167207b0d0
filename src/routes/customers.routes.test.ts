import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp } from '../../test/helpers/app.ts';

const validationShape = (message: string) => ({
  code: 'validation_error',
  message,
  details: null,
  status: 400,
  title: 'Bad Request',
  detail: message,
});

test('create returns 201 with the customer and emits customer.created', async (t) => {
  const { request } = await buildTestApp(t);
  const res = await request('POST', '/api/customers', {
    body: { email: 'ada@example.com', name: 'Ada', phone: '+2348000000000', metadata: { plan: 'gold' } },
  });
  assert.equal(res.status, 201);
  assert.match(res.body.id, /^cus_[0-9A-Z]{26}$/);
  assert.deepEqual(
    { ...res.body, id: undefined, created_at: undefined, updated_at: undefined },
    {
      id: undefined,
      email: 'ada@example.com',
      name: 'Ada',
      phone: '+2348000000000',
      preferred_locale: null,
      external_id: null,
      metadata: { plan: 'gold' },
      test_clock: null,
      tax_exempt: 'none',
      tax_ids: [],
      tax_rate_ids: [],
      address: null,
      created_at: undefined,
      updated_at: undefined,
    },
  );
  assert.equal(res.body.created_at, '2026-01-15T10:00:00.000Z');
  const events = await request('GET', '/api/events?topic=customer.created');
  assert.equal(events.body.meta.total, 1);
  assert.deepEqual(events.body.data[0].data, res.body);
});

test('preferred_locale: a tag in en, fr, de, es or pt is stored as given; others are 400 and change nothing', async (t) => {
  const { request } = await buildTestApp(t);
  const created = await request('POST', '/api/customers', {
    body: { email: 'kai@example.com', preferred_locale: 'de-AT' },
  });
  assert.equal(created.status, 201, created.text);
  assert.equal(created.body.preferred_locale, 'de-AT');
  const message = 'preferred_locale must be a BCP 47 language tag whose language is one of en, fr, de, es, pt';
  for (const preferred_locale of ['it', 'de_DE', 'xx-YY-ZZZZZZZZZ', '']) {
    const res = await request('POST', '/api/customers', { body: { email: 'lee@example.com', preferred_locale } });
    assert.equal(res.status, 400, preferred_locale);
    assert.equal(res.body.code, 'validation_error');
    if (preferred_locale !== '') assert.equal(res.body.message, message);
    const patch = await request('PATCH', `/api/customers/${created.body.id}`, { body: { preferred_locale } });
    assert.equal(patch.status, 400, preferred_locale);
  }
  assert.equal((await request('GET', '/api/customers?limit=10')).body.meta.total, 1);
  const patched = await request('PATCH', `/api/customers/${created.body.id}`, { body: { preferred_locale: 'pt-BR' } });
  assert.equal(patched.status, 200, patched.text);
  assert.equal(patched.body.preferred_locale, 'pt-BR');
  const fetched = await request('GET', `/api/customers/${created.body.id}`);
  assert.equal(fetched.body.preferred_locale, 'pt-BR');
  const cleared = await request('PATCH', `/api/customers/${created.body.id}`, { body: { preferred_locale: null } });
  assert.equal(cleared.body.preferred_locale, null);
  const events = await request('GET', '/api/events?topic=customer.updated');
  assert.deepEqual(
    events.body.data.map((event: { data: { preferred_locale: string | null } }) => event.data.preferred_locale),
    [null, 'pt-BR'],
  );
});

test('missing email is 400 "Email is required" in both shapes', async (t) => {
  const { request } = await buildTestApp(t);
  const res = await request('POST', '/api/customers', { body: { name: 'No Email' } });
  assert.equal(res.status, 400);
  assert.match(res.headers.get('content-type') ?? '', /application\/json/);
  assert.deepEqual(res.body, {
    ...validationShape('Email is required'),
    errors: [{ name: 'email', reason: 'Email is required' }],
  });
});

test('bad field values are 400 with a sentence naming the field, and change nothing', async (t) => {
  const { request } = await buildTestApp(t);
  const cases: [unknown, string][] = [
    [{ email: 'not-an-email' }, 'email must be a valid email address'],
    [{ email: 42 }, 'email must be a string'],
    [{ email: 'a@example.com', name: 7 }, 'name must be a string or null'],
    [{ email: 'a@example.com', unknown_field: 1 }, 'unknown_field is not a known field'],
    [{ email: 'a@example.com', metadata: { k: 5 } }, 'metadata.k must be a string'],
    [{ email: 'a@example.com', metadata: { k: 'v'.repeat(501) } }, 'metadata.k must be at most 500 characters'],
    [
      { email: 'a@example.com', metadata: { ['k'.repeat(41)]: 'v' } },
      `metadata keys must be at most 40 characters (got "${'k'.repeat(41)}")`,
    ],
    [
      {
        email: 'a@example.com',
        metadata: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, 'v'])),
      },
      'metadata must have at most 50 keys',
    ],
    [{ email: 'a@example.com', metadata: 'x' }, 'metadata must be an object'],
    [[{ email: 'a@example.com' }], 'Request body must be an object'],
  ];
  for (const [body, message] of cases) {
    const res = await request('POST', '/api/customers', { body });
    assert.equal(res.status, 400, JSON.stringify(body).slice(0, 80));
    assert.equal(res.body.message, message);
    assert.equal(res.body.detail, message);
    assert.doesNotMatch(res.text, /#\/|FST_ERR|properties/);
  }
  const list = await request('GET', '/api/customers');
  assert.equal(list.body.meta.total, 0);
  const events = await request('GET', '/api/events');
  assert.equal(events.body.meta.total, 0);
});

test('email is unique case-insensitively: 409 conflict', async (t) => {
  const { request } = await buildTestApp(t);
  assert.equal((await request('POST', '/api/customers', { body: { email: 'Grace@Example.com' } })).status, 201);
  const dup = await request('POST', '/api/customers', { body: { email: 'grace@example.COM' } });
  assert.equal(dup.status, 409);
  assert.equal(dup.body.code, 'conflict');
  assert.equal(dup.body.details, null);
  assert.equal((await request('GET', '/api/customers')).body.meta.total, 1);
});

test('internationalised emails (RFC 6531) are accepted as sent and unique by NFC + lower case: 409 conflict', async (t) => {
  const { request } = await buildTestApp(t);
  const created = await request('POST', '/api/customers', { body: { email: 'Ädä@example.com' } });
  assert.equal(created.status, 201);
  assert.equal(created.body.email, 'Ädä@example.com');
  for (const email of ['ÄDÄ@EXAMPLE.COM', 'Ädä@example.com'.normalize('NFD'), 'ädä@Example.com']) {
    const dup = await request('POST', '/api/customers', { body: { email } });
    assert.equal(dup.status, 409, email);
    assert.equal(dup.body.code, 'conflict');
  }
  assert.equal((await request('POST', '/api/customers', { body: { email: '用户@例子.广告' } })).status, 201);
  assert.equal((await request('GET', '/api/customers')).body.meta.total, 2);
});

test('emails without one @, with whitespace or control characters, or without a dot in the domain are 400', async (t) => {
  const { request } = await buildTestApp(t);
  for (const email of ['a@localhost', 'a b@example.com', 'Ädä@@example.com', 'ä\u0085@example.com', 'a@x..io']) {
    const res = await request('POST', '/api/customers', { body: { email } });
    assert.equal(res.status, 400, JSON.stringify(email));
    assert.equal(res.body.message, 'email must be a valid email address');
  }
  assert.equal((await request('GET', '/api/customers')).body.meta.total, 0);
});

test('concurrent creates with one email: exactly one wins', async (t) => {
  const { request } = await buildTestApp(t);
  const results = await Promise.all(
    Array.from({ length: 8 }, (_, i) =>
      request('POST', '/api/customers', { body: { email: i % 2 ? 'race@x.io' : 'RACE@x.io' } }),
    ),
  );
  assert.deepEqual(results.map((r) => r.status).sort(), [201, 409, 409, 409, 409, 409, 409, 409]);
  assert.equal((await request('GET', '/api/customers')).body.meta.total, 1);
});

test('get returns the customer; unknown and malformed ids are 404 not_found', async (t) => {
  const { request } = await buildTestApp(t);
  const created = (await request('POST', '/api/customers', { body: { email: 'get@example.com' } })).body;
  const got = await request('GET', `/api/customers/${created.id}`);
  assert.equal(got.status, 200);
  // GET shows the credit balances too (SPEC §14): none yet.
  assert.deepEqual(got.body, { ...created, balances: {} });
  for (const id of [
    'cus_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
    'nope',
    'cus_',
    "cus_1'; drop table customers;--",
    'x'.repeat(64),
  ]) {
    const res = await request('GET', `/api/customers/${encodeURIComponent(id)}`);
    assert.equal(res.status, 404, id);
    assert.equal(res.body.code, 'not_found');
  }
  const tooLong = await request('GET', `/api/customers/${'x'.repeat(65)}`);
  assert.equal(tooLong.status, 400);
});

test('patch changes the given fields, merges metadata and emits customer.updated', async (t) => {
  const { request, clock } = await buildTestApp(t);
  const created = (
    await request('POST', '/api/customers', {
      body: { email: 'p@example.com', name: 'P', metadata: { a: '1', b: '2' } },
    })
  ).body;
  clock.advance(60_000);
  const res = await request('PATCH', `/api/customers/${created.id}`, {
    body: { name: null, phone: '+1555', metadata: { a: '', c: '3' } },
  });
  assert.equal(res.status, 200);
  assert.equal(res.body.name, null);
  assert.equal(res.body.phone, '+1555');
  assert.deepEqual(res.body.metadata, { b: '2', c: '3' });
  assert.equal(res.body.created_at, created.created_at);
  assert.equal(res.body.updated_at, '2026-01-15T10:01:00.000Z');
  const events = await request('GET', '/api/events?topic=customer.updated');
  assert.equal(events.body.meta.total, 1);
  assert.deepEqual(events.body.data[0].data, res.body);
  assert.deepEqual((await request('GET', `/api/customers/${created.id}`)).body, { ...res.body, balances: {} });

  const cleared = await request('PATCH', `/api/customers/${created.id}`, { body: { metadata: null } });
  assert.deepEqual(cleared.body.metadata, {});
});

test('patch with nothing new changes nothing and emits nothing', async (t) => {
  const { request, clock } = await buildTestApp(t);
  const created = (await request('POST', '/api/customers', { body: { email: 'same@example.com', name: 'S' } })).body;
  clock.advance(1000);
  const res = await request('PATCH', `/api/customers/${created.id}`, { body: { name: 'S' } });
  assert.equal(res.status, 200);
  assert.deepEqual(res.body, created);
  assert.equal((await request('GET', '/api/events?topic=customer.updated')).body.meta.total, 0);
});

test("patch to another customer's email is 409; to a new case of its own email is allowed", async (t) => {
  const { request } = await buildTestApp(t);
  const a = (await request('POST', '/api/customers', { body: { email: 'a@example.com' } })).body;
  await request('POST', '/api/customers', { body: { email: 'b@example.com' } });
  const clash = await request('PATCH', `/api/customers/${a.id}`, { body: { email: 'B@example.com' } });
  assert.equal(clash.status, 409);
  assert.equal(clash.body.code, 'conflict');
  assert.equal((await request('GET', `/api/customers/${a.id}`)).body.email, 'a@example.com');
  const recase = await request('PATCH', `/api/customers/${a.id}`, { body: { email: 'A@Example.com' } });
  assert.equal(recase.status, 200);
  assert.equal(recase.body.email, 'A@Example.com');
});

test("patch to an email that normalises (NFC + lower case) like another customer's is 409 and changes nothing", async (t) => {
  const { request } = await buildTestApp(t);
  const a = (await request('POST', '/api/customers', { body: { email: 'a@example.com' } })).body;
  const b = (await request('POST', '/api/customers', { body: { email: 'Ädä.Ünï@example.com' } })).body;
  const clash = await request('PATCH', `/api/customers/${a.id}`, {
    body: { email: 'ÄDÄ.ÜNÏ@EXAMPLE.COM'.normalize('NFD') },
  });
  assert.equal(clash.status, 409);
  assert.equal(clash.body.code, 'conflict');
  assert.equal((await request('GET', `/api/customers/${a.id}`)).body.email, 'a@example.com');
  assert.equal((await request('GET', '/api/events?topic=customer.updated')).body.meta.total, 0);
  const respelled = await request('PATCH', `/api/customers/${b.id}`, {
    body: { email: 'ädä.ünï@example.com'.normalize('NFD') },
  });
  assert.equal(respelled.status, 200);
  assert.equal(respelled.body.email, 'ädä.ünï@example.com'.normalize('NFD'));
  // The old spelling still belongs to b: a new customer with it is refused.
  assert.equal((await request('POST', '/api/customers', { body: { email: 'Ädä.Ünï@example.com' } })).status, 409);
  // Leaving the address frees it.
  const moved = await request('PATCH', `/api/customers/${b.id}`, { body: { email: 'b@example.com' } });
  assert.equal(moved.status, 200);
  assert.equal((await request('POST', '/api/customers', { body: { email: 'ÄDÄ.ÜNÏ@example.com' } })).status, 201);
});

test('patch metadata merge beyond 50 keys is 400 and changes nothing', async (t) => {
  const { request } = await buildTestApp(t);
  const metadata = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`k${i}`, 'v']));
  const created = (await request('POST', '/api/customers', { body: { email: 'm@example.com', metadata } })).body;
  const res = await request('PATCH', `/api/customers/${created.id}`, { body: { metadata: { extra: 'v' } } });
  assert.equal(res.status, 400);
  assert.equal(res.body.message, 'Metadata must have at most 50 keys');
  assert.equal(Object.keys((await request('GET', `/api/customers/${created.id}`)).body.metadata).length, 50);
});

test('patch of an unknown customer is 404', async (t) => {
  const { request } = await buildTestApp(t);
  const res = await request('PATCH', '/api/customers/cus_01JD3Q7Z8X9Y0A1B2C3D4E5F6G', {
    body: { name: 'x' },
  });
  assert.equal(res.status, 404);
  assert.equal(res.body.code, 'not_found');
});

test('delete is 204, emits customer.deleted, then the customer is gone and its email free', async (t) => {
  const { request } = await buildTestApp(t);
  const created = (await request('POST', '/api/customers', { body: { email: 'd@example.com' } })).body;
  const res = await request('DELETE', `/api/customers/${created.id}`);
  assert.equal(res.status, 204);
  assert.equal(res.text, '');
  assert.equal((await request('GET', `/api/customers/${created.id}`)).status, 404);
  assert.equal((await request('DELETE', `/api/customers/${created.id}`)).status, 404);
  assert.equal((await request('GET', '/api/customers')).body.meta.total, 0);
  const events = await request('GET', '/api/events?topic=customer.deleted');
  assert.deepEqual(events.body.data[0].data, created);
  assert.equal((await request('POST', '/api/customers', { body: { email: 'D@example.com' } })).status, 201);
});

test('list pages, sorts on whitelisted fields with id tie-break, and totals', async (t) => {
  const { request, clock } = await buildTestApp(t);
  const names = ['carol', 'alice', 'bob', 'dave', 'erin'];
  const created = [];
  for (const name of names) {
    created.push((await request('POST', '/api/customers', { body: { email: `${name}@example.com`, name } })).body);
    if (name !== 'alice') clock.advance(1000); // alice and bob share a created_at: the id breaks the tie
  }
  const byDefault = await request('GET', '/api/customers');
  assert.deepEqual(byDefault.body.meta, { total: 5, page: 0, limit: 10 });
  assert.deepEqual(
    byDefault.body.data.map((c: { name: string }) => c.name),
    ['erin', 'dave', 'bob', 'alice', 'carol'],
  );
  const asc = await request('GET', '/api/customers?sort_order=asc');
  assert.deepEqual(
    asc.body.data.map((c: { name: string }) => c.name),
    ['carol', 'alice', 'bob', 'dave', 'erin'],
  );
  const byEmail = await request('GET', '/api/customers?sort_by=email&sort_order=asc&limit=2&page=1');
  assert.deepEqual(
    byEmail.body.data.map((c: { name: string }) => c.name),
    ['carol', 'dave'],
  );
  assert.deepEqual(byEmail.body.meta, { total: 5, page: 1, limit: 2 });
  const byName = await request('GET', '/api/customers?sort_by=name');
  assert.deepEqual(
    byName.body.data.map((c: { name: string }) => c.name),
    ['erin', 'dave', 'carol', 'bob', 'alice'],
  );
  const byUpdated = await request('GET', '/api/customers?sort_by=updated_at&limit=1');
  assert.equal(byUpdated.body.data[0].name, 'erin');
});

test('list parameters: lenient page/limit, strict sort_by/sort_order', async (t) => {
  const { request } = await buildTestApp(t);
  const meta = async (query: string) => (await request('GET', `/api/customers?${query}`)).body.meta;
  assert.deepEqual(await meta('page=-4&limit=5'), { total: 0, page: 0, limit: 5 });
  assert.deepEqual(await meta('page=abc&limit=xyz'), { total: 0, page: 0, limit: 10 });
  assert.deepEqual(await meta('limit=1000'), { total: 0, page: 0, limit: 100 });
  assert.deepEqual(await meta('limit=0'), { total: 0, page: 0, limit: 10 });
  assert.deepEqual(await meta('limit=-5'), { total: 0, page: 0, limit: 10 });
  assert.deepEqual(await meta('page=3'), { total: 0, page: 3, limit: 10 });
  const cases: [string, string][] = [
    ['sort_by=password', 'sort_by must be one of: created_at, updated_at, email, name'],
    ['sort_order=up', 'sort_order must be one of: asc, desc'],
    ['sort_by=', 'sort_by must be one of: created_at, updated_at, email, name'],
  ];
  for (const [query, message] of cases) {
    const res = await request('GET', `/api/customers?${query}`);
    assert.equal(res.status, 400, query);
    assert.equal(res.body.message, message);
    assert.deepEqual(res.body.errors, [{ name: query.split('=')[0], reason: message }]);
  }
});
