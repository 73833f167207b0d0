import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { get as httpGet } from 'node:http';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import Fastify from 'fastify';
import { buildTestApp } from '../../test/helpers/app.ts';
import { TOPICS } from '../modules/events/events.topics.ts';
import { API_DOCUMENT, TAGS } from '../routes/api-document.ts';
import { registerOpenApi } from './openapi.ts';

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'];

/** The response object itself, when `response` refers to one under `components.responses`. */
function resolved(doc: any, response: any): any {
  const ref = response?.$ref as string | undefined;
  return ref ? doc.components.responses[ref.replace('#/components/responses/', '')] : response;
}

/** Every operation of the document's `paths`, with its method and path. */
function operations(doc: any): { method: string; path: string; operation: any }[] {
  const found = [];
  for (const [path, item] of Object.entries<any>(doc.paths)) {
    for (const [method, operation] of Object.entries<any>(item)) {
      if (METHODS.includes(method)) found.push({ method, path, operation });
    }
  }
  return found;
}

test('/openapi.json is OpenAPI 3.1 with every API route, security schemes and error bodies', async (t) => {
  const { request } = await buildTestApp(t);
  const res = await request('GET', '/openapi.json', { key: null });
  assert.equal(res.status, 200);
  const doc = res.body;
  assert.equal(doc.openapi, '3.1.0');
  assert.deepEqual(Object.keys(doc.components.securitySchemes).sort(), ['apiKeyHeader', 'bearerAuth']);
  assert.ok(doc.components.schemas.Error);
  assert.ok(doc.components.schemas.ValidationError.properties.errors);
  for (const path of [
    '/api/health',
    '/api/customers',
    '/api/customers/{id}',
    '/api/events',
    '/api/events/{id}',
    '/api/api-keys',
  ]) {
    assert.ok(doc.paths[path], path);
  }
  const create = doc.paths['/api/customers'].post;
  assert.ok(create.requestBody.content['application/json'].schema.properties.email);
  assert.ok(create.responses['201']);
  assert.match(JSON.stringify(resolved(doc, create.responses['400'])), /schemas\/ValidationError/);
  assert.match(JSON.stringify(resolved(doc, create.responses['409'])), /schemas\/Error/);
  assert.equal(create.responses['404'], undefined);
  assert.deepEqual(doc.paths['/api/customers/{id}'].get.responses['404'], { $ref: '#/components/responses/NotFound' });
  assert.equal(doc.components.responses.NotFound.content['application/json'].example.code, 'not_found');
  assert.ok(doc.components.responses.TooManyRequests.headers['Retry-After'], '429 documents Retry-After');
  assert.ok(create.security.length > 0);
  assert.equal(doc.paths['/openapi.json'], undefined);
  const listParams = doc.paths['/api/customers'].get.parameters
    .filter((p: { in: string }) => p.in === 'query')
    .map((p: { name: string }) => p.name)
    .sort();
  assert.deepEqual(listParams, ['limit', 'page', 'sort_by', 'sort_order']);
});

test('/openapi.json: servers name the instance as reached, public routes say security: [], license and tags', async (t) => {
  const { request, baseUrl } = await buildTestApp(t);
  const doc = (await request('GET', '/openapi.json', { key: null })).body;
  assert.deepEqual(doc.servers, [{ url: baseUrl }]);
  // Behind another name (fetch cannot set Host): the servers follow the Host the client used.
  const proxied = await new Promise<any>((resolve, reject) => {
    const url = new URL('/openapi.json', baseUrl);
    httpGet(url, { headers: { host: 'billing.example.com' } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => (text += chunk));
      res.on('end', () => resolve(JSON.parse(text)));
    }).on('error', reject);
  });
  assert.deepEqual(proxied.servers, [{ url: 'http://billing.example.com' }]);
  assert.equal(doc.info.license.name, 'MIT');
  assert.deepEqual(doc.paths['/api/health'].get.security, []);
  assert.deepEqual(doc.paths['/api/notify'].post.security, []);
  const notifyBody = doc.paths['/api/notify'].post.requestBody.content['application/json'];
  assert.equal(notifyBody.example.event, 'charge.success', "POST /api/notify documents the provider's body");
  const tagNames = doc.tags.map((tag: { name: string }) => tag.name);
  assert.deepEqual(
    tagNames,
    TAGS.map((tag) => tag.name),
  );
  for (const tag of doc.tags) assert.ok(tag.description, `tag ${tag.name} has a description`);
  for (const { method, path, operation } of operations(doc)) {
    assert.equal(operation.tags?.length, 1, `${method} ${path} has one tag`);
    assert.ok(tagNames.includes(operation.tags[0]), `${method} ${path}: tag ${operation.tags[0]} is listed`);
    const isPublic = path === '/api/health' || path === '/api/notify';
    if (isPublic) assert.deepEqual(operation.security, [], `${method} ${path} is public`);
    else assert.ok(operation.security.length > 0, `${method} ${path} needs a key`);
  }
});

test('/openapi.json: every operation has a unique operationId, a summary, described responses, 429 and 500', async (t) => {
  const { request } = await buildTestApp(t);
  const doc = (await request('GET', '/openapi.json', { key: null })).body;
  const ids = new Set<string>();
  const all = [
    ...operations(doc),
    ...Object.entries<any>(doc.webhooks).map(([path, item]) => ({ method: 'post', path, operation: item.post })),
  ];
  for (const { method, path, operation } of all) {
    const where = `${method} ${path}`;
    assert.match(operation.operationId ?? '', /^[a-z][A-Za-z]+$/, `${where} has a camelCase operationId`);
    assert.ok(!ids.has(operation.operationId), `${where}: operationId ${operation.operationId} is unique`);
    ids.add(operation.operationId);
    assert.ok(operation.summary, `${where} has a summary`);
    for (const [status, response] of Object.entries<any>(operation.responses)) {
      const { description } = resolved(doc, response);
      assert.ok(description && description !== 'Default Response', `${where} ${status} is described`);
    }
  }
  for (const { method, path, operation } of operations(doc)) {
    if (path.startsWith('/api/')) {
      for (const status of ['429', '500']) {
        assert.match(
          JSON.stringify(resolved(doc, operation.responses[status]) ?? null),
          /schemas\/Error/,
          `${method} ${path} documents ${status}`,
        );
      }
    }
  }
  const expected = {
    'get /api/customers': 'listCustomers',
    'post /api/customers': 'createCustomer',
    'get /api/customers/{id}': 'getCustomer',
    'put /api/subscriptions/{id}/cancel': 'cancelSubscription',
    'get /api/invoices': 'listInvoices',
    'post /api/invoices/{id}/void': 'voidInvoice',
    'post /api/invoices/{id}/mark-uncollectible': 'markInvoiceUncollectible',
    'post /api/webhooks/{id}/deliveries/{delivery_id}/retry': 'retryWebhookDelivery',
    'post /api/api-keys/{id}/rotate': 'rotateApiKey',
  };
  for (const [key, operationId] of Object.entries(expected)) {
    const [method, path] = key.split(' ') as [string, string];
    assert.equal(doc.paths[path][method].operationId, operationId, key);
  }
});

test('/openapi.json: resources and lists are named components, referenced by every success response, with examples', async (t) => {
  const { request } = await buildTestApp(t);
  const doc = (await request('GET', '/openapi.json', { key: null })).body;
  const schemas = doc.components.schemas;
  for (const name of [
    'Customer',
    'CustomerList',
    'Plan',
    'PlanList',
    'Subscription',
    'SubscriptionList',
    'Payment',
    'PaymentList',
    'Refund',
    'RefundList',
    'Invoice',
    'InvoiceList',
    'DunningCase',
    'DunningCaseList',
    'WebhookEndpoint',
    'WebhookEndpointList',
    'WebhookDelivery',
    'WebhookDeliveryList',
    'Event',
    'EventList',
    'ApiKey',
    'ApiKeyList',
  ]) {
    assert.ok(schemas[name], `components.schemas.${name}`);
    assert.ok(schemas[name].description, `${name} is described`);
  }
  assert.deepEqual(schemas.CustomerList.properties.data.items, { $ref: '#/components/schemas/Customer' });
  assert.ok(!Object.keys(schemas).some((name) => name.startsWith('def-')), 'no anonymous components');
  for (const { method, path, operation } of operations(doc)) {
    const where = `${method} ${path}`;
    for (const [status, response] of Object.entries<any>(operation.responses)) {
      const media = resolved(doc, response).content?.['application/json'];
      if (!media) continue;
      assert.match(media.schema.$ref ?? '', /^#\/components\/schemas\/\w+$/, `${where} ${status} is a named schema`);
      if (status.startsWith('2')) assert.notEqual(media.example, undefined, `${where} ${status} has an example`);
    }
    const body = operation.requestBody?.content?.['application/json'];
    if (body) assert.notEqual(body.example, undefined, `${where}: its request body has an example`);
  }
});

test('/openapi.json: page and limit are integers, optional bodies optional, validation-only keywords left out', async (t) => {
  const { request } = await buildTestApp(t);
  const doc = (await request('GET', '/openapi.json', { key: null })).body;
  for (const { method, path, operation } of operations(doc)) {
    for (const parameter of operation.parameters ?? []) {
      if (parameter.in === 'query' && (parameter.name === 'page' || parameter.name === 'limit')) {
        assert.equal(parameter.schema.type, 'integer', `${method} ${path} ${parameter.name}`);
      }
    }
  }
  const limit = doc.paths['/api/customers'].get.parameters.find((p: { name: string }) => p.name === 'limit');
  assert.deepEqual([limit.schema.minimum, limit.schema.maximum, limit.schema.default], [1, 100, 10]);
  assert.equal(doc.paths['/api/subscriptions/{id}/cancel'].put.requestBody.required, false);
  assert.equal(doc.paths['/api/api-keys/{id}/rotate'].post.requestBody.required, false);
  assert.equal(doc.paths['/api/customers'].post.requestBody.required, true);
  assert.doesNotMatch(JSON.stringify(doc), /formatMinimum|formatMaximum/);
  // The lenient parsing stays: a limit that is not a number is the default, not a 400.
  const page = await request('GET', '/api/customers?limit=abc&page=-3');
  assert.equal(page.status, 200);
  assert.deepEqual(page.body.meta, { total: 0, page: 0, limit: 10 });
});

test('/openapi.json: the webhooks section describes every topic with its data schema', async (t) => {
  const { request } = await buildTestApp(t);
  const doc = (await request('GET', '/openapi.json', { key: null })).body;
  assert.deepEqual(Object.keys(doc.webhooks).sort(), [...TOPICS].sort());
  for (const topic of TOPICS) {
    const media = doc.webhooks[topic].post.requestBody.content['application/json'];
    assert.equal(media.schema.properties.topic.const, topic);
    const ref = media.schema.properties.data.$ref as string;
    assert.match(ref, /^#\/components\/schemas\/\w+$/, topic);
    assert.ok(doc.components.schemas[ref.split('/').pop() as string], `${topic}: ${ref} exists`);
    assert.equal(media.example.topic, topic);
    assert.ok(media.example.data, `${topic} has an example`);
  }
  assert.equal(
    doc.webhooks['payment.succeeded'].post.requestBody.content['application/json'].schema.properties.data.$ref,
    '#/components/schemas/Payment',
  );
  assert.equal(
    doc.webhooks['dunning.reminder'].post.requestBody.content['application/json'].schema.properties.data.$ref,
    '#/components/schemas/DunningReminder',
  );
});

test("/openapi.json passes Redocly's recommended rules with 0 errors and 0 warnings", async (t) => {
  const { request } = await buildTestApp(t);
  const res = await request('GET', '/openapi.json', { key: null });
  const dir = mkdtempSync(join(tmpdir(), 'openapi-lint-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'openapi.json');
  writeFileSync(file, res.text);
  const cli = join(dirname(createRequire(import.meta.url).resolve('@redocly/cli/package.json')), 'bin', 'cli.js');
  const run = spawnSync(process.execPath, [cli, 'lint', file, '--extends', 'recommended', '--format', 'json'], {
    encoding: 'utf8',
    cwd: dir,
    env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
  });
  const report = JSON.parse(run.stdout);
  const problems = report.problems.map(
    (p: any) => `${p.severity} ${p.ruleId}: ${p.message} at ${p.location[0]?.pointer}`,
  );
  assert.deepEqual(problems, []);
  assert.deepEqual(report.totals, { errors: 0, warnings: 0, ignored: 0 });
});

test('an API route without operationId or summary stops the app from starting', async () => {
  for (const schema of [{ summary: 'List things' }, { operationId: 'listThings' }, {}]) {
    const app = Fastify();
    await registerOpenApi(app, API_DOCUMENT);
    assert.throws(
      () => app.get('/api/things', { schema }, async () => ({})),
      /GET \/api\/things needs schema\.(operationId|summary)/,
    );
    await app.close();
  }
  const app = Fastify();
  await registerOpenApi(app, API_DOCUMENT);
  app.get('/api/things', { schema: { operationId: 'listThings', summary: 'List things' } }, async () => ({}));
  app.get('/elsewhere', async () => ({}));
  await app.ready();
  await app.close();
});

test('/docs renders the API reference from /openapi.json without an API key', async (t) => {
  const { request } = await buildTestApp(t);
  const page = await request('GET', '/docs/', { key: null });
  assert.equal(page.status, 200);
  assert.match(page.headers.get('content-type') ?? '', /text\/html/);
  assert.match(page.text, /openapi\.json/);
  const script = await request('GET', '/docs/js/scalar.js', { key: null });
  assert.equal(script.status, 200);
});

test('/openapi.json documents the 429 of every API route and Idempotency-Key on keyed POST/PUT routes', async (t) => {
  const { request } = await buildTestApp(t);
  const doc = (await request('GET', '/openapi.json', { key: null })).body;
  for (const { method, path, operation } of operations(doc)) {
    assert.match(
      JSON.stringify(resolved(doc, operation.responses['429']) ?? null),
      /schemas\/Error/,
      `${method} ${path} documents 429`,
    );
    const idempotency = (operation.parameters ?? []).find((p: { name: string }) => p.name === 'idempotency-key');
    const keyed =
      (method === 'post' || method === 'put') && operation.security.length > 0 && !path.startsWith('/api/api-keys');
    assert.equal(Boolean(idempotency), keyed, `${method} ${path}: Idempotency-Key documented iff keyed POST/PUT`);
    if (idempotency) assert.equal(idempotency.schema.maxLength, 255);
  }
});
