// Every date-time a client sends — found by walking /openapi.json, so a new one is covered
// the day it is added — is an RFC 3339 instant from 1970-01-01T00:00:00Z to
// 9999-12-31T23:59:59.999Z, or a 400 naming the field (SPEC §2 "Time"). Nothing is stored
// on a refusal, and the bounds themselves are stored and read back as sent, on both databases.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp, type TestApp } from '../../test/helpers/app.ts';

const METHODS = ['get', 'put', 'post', 'delete', 'patch'];

interface DateInput {
  method: string;
  path: string;
  /** Where the value goes: a body property or a query parameter. */
  in: 'body' | 'query';
  name: string;
  /** A valid body of the operation (its example), the date input to be replaced. */
  body: Record<string, unknown> | undefined;
}

/** The schema `schema` names, following a `$ref` to `components.schemas`. */
function resolve(doc: any, schema: any): any {
  const ref = schema?.$ref as string | undefined;
  return ref ? doc.components.schemas[ref.replace('#/components/schemas/', '')] : schema;
}

function isDateTime(schema: any): boolean {
  return schema?.format === 'date-time';
}

/** Every request input of the document in `date-time` format (top-level body properties and query parameters). */
function dateInputs(doc: any): DateInput[] {
  const found: DateInput[] = [];
  for (const [path, item] of Object.entries<any>(doc.paths)) {
    for (const [method, operation] of Object.entries<any>(item)) {
      if (!METHODS.includes(method)) continue;
      for (const parameter of operation.parameters ?? []) {
        if (isDateTime(resolve(doc, parameter.schema))) {
          assert.equal(parameter.in, 'query', `${method} ${path}: a date-time ${parameter.in} parameter`);
          found.push({ method, path, in: 'query', name: parameter.name, body: undefined });
        }
      }
      const schema = resolve(doc, operation.requestBody?.content?.['application/json']?.schema);
      for (const [name, property] of Object.entries<any>(schema?.properties ?? {})) {
        const resolved = resolve(doc, property);
        // A nested date-time would need this walk to go deeper: fail loudly rather than skip it.
        assert.ok(
          !JSON.stringify(resolved.properties ?? resolved.items ?? {}).includes('date-time'),
          `${method} ${path}: ${name} holds a nested date-time`,
        );
        if (!isDateTime(resolved)) continue;
        const example = schema.examples?.[0] ?? operation.requestBody.content['application/json'].example;
        assert.ok(example, `${method} ${path} needs a request example to build a valid body from`);
        found.push({ method, path, in: 'body', name, body: example });
      }
    }
  }
  return found;
}

/** Sends `value` as the date input, the rest of the request valid; path ids are well-formed but unknown. */
function send(app: TestApp, input: DateInput, value: string) {
  const path = input.path.replaceAll(/\{[^}]+\}/g, 'clock_01JD3Q7Z8X9Y0A1B2C3D4E5F6G');
  if (input.in === 'query') {
    return app.request(input.method.toUpperCase(), `${path}?${new URLSearchParams({ [input.name]: value })}`);
  }
  return app.request(input.method.toUpperCase(), path, { body: { ...input.body, [input.name]: value } });
}

const TOO_EARLY = [
  '0000-01-01T00:00:00Z',
  '0001-01-01T00:00:00Z',
  '1900-01-01T00:00:00Z',
  '1969-12-31T23:59:59.999Z',
  // 1969-12-31T23:59:59.999Z once converted to UTC.
  '1970-01-01T00:59:59.999+01:00',
];
const TOO_LATE = ['10000-01-01T00:00:00Z', '+010000-01-01T00:00:00.000Z', '9999-12-31T23:00:00-05:00'];
// Not RFC 3339 (or not a real instant): `Date` reads none of these as the client meant.
const NOT_DATES = [
  '2026-06-30T23:59:60Z',
  '2026-01-01T00:00:00+05',
  '2026-01-01T00:00:00+0530',
  '2026-02-30T00:00:00Z',
  '2026-01-01 00:00:00Z',
  '2026-01-01',
];

test('every date-time input of the API refuses instants outside 1970-01-01 … 9999-12-31 with 400 naming the field', async (t) => {
  const app = await buildTestApp(t, { env: { TEST_CLOCKS: 'true' } });
  const doc = (await app.request('GET', '/openapi.json', { key: null })).body;
  const inputs = dateInputs(doc);
  const names = inputs.map((i) => `${i.method} ${i.path} ${i.name}`);
  for (const known of [
    'post /api/test-clocks frozen_time',
    'post /api/test-clocks/{id}/advance frozen_time',
    'post /api/api-keys expires_at',
  ]) {
    assert.ok(names.includes(known), `the walk finds ${known} (found: ${names.join('; ')})`);
  }
  const cases = [
    ...TOO_EARLY.map((value) => [value, /^(\S+) must be no earlier than 1970-01-01T00:00:00\.000Z$/] as const),
    ...TOO_LATE.map(
      (value) => [value, /^(\S+) must be (no later than 9999-12-31T23:59:59\.999Z|an ISO 8601 date-time)/] as const,
    ),
    ...NOT_DATES.map((value) => [value, /^(\S+) must be an ISO 8601 date-time such as /] as const),
  ];
  for (const input of inputs) {
    for (const [value, message] of cases) {
      const res = await send(app, input, value);
      const where = `${input.method} ${input.path} ${input.name}=${value}`;
      assert.equal(res.status, 400, `${where}: ${res.text}`);
      assert.equal(res.body.code, 'validation_error', where);
      assert.match(res.body.message, message, where);
      assert.equal(res.body.message.split(' ')[0], input.name, where);
      assert.deepEqual(
        res.body.errors.map((e: any) => e.name),
        [input.name],
        where,
      );
    }
  }
  // Refusals stored nothing.
  assert.equal((await app.request('GET', '/api/test-clocks')).body.meta.total, 0);
  assert.equal((await app.request('GET', '/api/api-keys')).body.meta.total, 0);
});

test('the first and last storable instants are accepted, stored and read back exactly', async (t) => {
  const app = await buildTestApp(t, { env: { TEST_CLOCKS: 'true' } });
  for (const [sent, stored] of [
    ['1970-01-01T00:00:00Z', '1970-01-01T00:00:00.000Z'],
    ['1970-01-01T01:00:00+01:00', '1970-01-01T00:00:00.000Z'],
    ['9999-12-31T23:59:59.999Z', '9999-12-31T23:59:59.999Z'],
    ['9999-12-31t18:59:59.999999-05:00', '9999-12-31T23:59:59.999Z'],
  ]) {
    const created = await app.request('POST', '/api/test-clocks', { body: { frozen_time: sent } });
    assert.equal(created.status, 201, `${sent}: ${created.text}`);
    assert.equal(created.body.frozen_time, stored, sent);
    const read = await app.request('GET', `/api/test-clocks/${created.body.id}`);
    assert.equal(read.body.frozen_time, stored, `${sent} read back`);
  }
  const list = await app.request('GET', '/api/test-clocks?sort_by=frozen_time&sort_order=asc');
  assert.equal(list.status, 200);
  assert.deepEqual(
    list.body.data.map((c: any) => c.frozen_time),
    ['1970-01-01T00:00:00.000Z', '1970-01-01T00:00:00.000Z', '9999-12-31T23:59:59.999Z', '9999-12-31T23:59:59.999Z'],
  );
});
