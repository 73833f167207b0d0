// Real responses against the schemas /openapi.json publishes for them (Ajv, JSON Schema
// 2020-12 as OpenAPI 3.1 uses): each resource, each list, errors, and every event's `data`
// against the schema its topic has in the `webhooks` section. Also every example of the
// document against its schema.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import type { TestApp } from '../../test/helpers/app.ts';
import { createPayment } from '../../test/helpers/factories.ts';
import { issueTestInvoice } from '../../test/helpers/invoices.ts';
import { PROVIDER_ENV, paystackRefund, postPaystack } from '../../test/helpers/provider-events.ts';
import { RECEIVER_HOST } from '../../test/helpers/webhook-receiver.ts';
import { buildWebhookTestApp } from '../../test/helpers/webhooks.ts';
import { EMAIL_FORMATS } from '../modules/customers/customers.schemas.ts';
import { JOBS } from '../worker/jobs.ts';
import { Worker } from '../worker/runner.ts';

const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default;
const DAY = 86_400_000;

/** Validates values against the document's schemas, as a client generated from it would expect them. */
function documentValidator(doc: any) {
  // inlineRefs off: a component is compiled once and shared by every schema that refers to it,
  // not inlined (and compiled again) into each; a schema checked twice is compiled once.
  const ajv = new Ajv2020({ strict: false, allErrors: true, inlineRefs: false });
  addFormats(ajv);
  ajv.addFormat('idn-email', EMAIL_FORMATS['idn-email']);
  ajv.addSchema({ $id: 'openapi.json', components: doc.components });
  const compiled = new Map<string, ValidateFunction>();
  const check = (schema: object, value: unknown, where: string) => {
    const text = JSON.stringify(schema);
    let validate = compiled.get(text);
    if (!validate) compiled.set(text, (validate = ajv.compile(rebase(schema))));
    assert.ok(validate(value), `${where}: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(value)}`);
  };
  return {
    /** `res` is what the document promises for `method path` at `res.status`. */
    response(method: string, path: string, res: { status: number; body: unknown }) {
      const operation = doc.paths[path]?.[method];
      assert.ok(operation, `${method} ${path} is documented`);
      let response = operation.responses[String(res.status)];
      if (response?.$ref) response = doc.components.responses[response.$ref.replace('#/components/responses/', '')];
      assert.ok(response, `${method} ${path} documents ${res.status}`);
      check(response.content['application/json'].schema, res.body, `${method} ${path} ${res.status}`);
    },
    /** `data` is what the `webhooks` section promises for `topic`. */
    eventData(topic: string, data: unknown) {
      const media = doc.webhooks[topic]?.post.requestBody.content['application/json'];
      assert.ok(media, `${topic} is in webhooks`);
      check(media.schema, { topic, data }, `webhook ${topic}`);
    },
    check,
  };
}

/** `#/components/…` refs of a schema outside the document point into it (`openapi.json#/components/…`). */
function rebase(schema: object): object {
  return JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', '"openapi.json#/components/'));
}

async function json(app: TestApp, method: string, path: string, body?: unknown, key?: string | null) {
  return app.request(method, path, { body, key });
}

test('real responses of every resource, list and error match the schemas /openapi.json documents', async (t) => {
  const app = await buildWebhookTestApp(t, { env: PROVIDER_ENV });
  const doc = (await app.request('GET', '/openapi.json', { key: null })).body;
  const v = documentValidator(doc);
  const ok = async (method: string, template: string, path: string, body?: unknown) => {
    const res = await json(app, method, path, body);
    assert.ok(res.status < 300, `${method} ${path}: ${res.status} ${res.text}`);
    v.response(method.toLowerCase(), template, res);
    return res.body;
  };

  await ok('GET', '/api/health', '/api/health');
  const customer = await ok('POST', '/api/customers', '/api/customers', {
    email: 'ada@example.com',
    name: 'Ada',
    metadata: { crm_id: '1' },
  });
  await ok('GET', '/api/customers/{id}', `/api/customers/${customer.id}`);
  await ok('PATCH', '/api/customers/{id}', `/api/customers/${customer.id}`, { phone: '+2348012345678' });
  await ok('GET', '/api/customers', '/api/customers');
  const plan = await ok('POST', '/api/plans', '/api/plans', {
    name: 'Pro',
    amount: 5000,
    currency: 'NGN',
    interval: 'month',
  });
  await ok('GET', '/api/plans/{id}', `/api/plans/${plan.id}`);
  await ok('GET', '/api/plans', '/api/plans');
  const sub = await ok('POST', '/api/subscriptions', '/api/subscriptions', {
    customer_id: customer.id,
    plan_id: plan.id,
  });
  await ok('GET', '/api/subscriptions/{id}', `/api/subscriptions/${sub.id}`);
  await ok('GET', '/api/subscriptions', '/api/subscriptions');

  // Payments, a refund, a failure that opens a dunning case, a reminder, then a cancel.
  const paid = await createPayment(app, { subscriptionId: sub.id });
  await postPaystack(app, paystackRefund({ transactionReference: paid.provider_reference, amount: '2000' }));
  await createPayment(app, { subscriptionId: sub.id, failed: true });
  await ok('GET', '/api/payments/{id}', `/api/payments/${paid.id}`);
  await ok('GET', '/api/payments', '/api/payments');
  const refunds = await ok('GET', '/api/refunds', '/api/refunds');
  assert.equal(refunds.data.length, 1);
  await ok('GET', '/api/refunds/{id}', `/api/refunds/${refunds.data[0].id}`);
  const cases = await ok('GET', '/api/dunning/cases', '/api/dunning/cases');
  assert.equal(cases.data.length, 1);
  app.clock.advance(DAY + 1000);
  await new Worker(app.deps, JOBS, {
    error: (object: object) => assert.fail(`worker job failed: ${String(Object.values(object)[0])}`),
  }).runOnce();
  const withSteps = await ok('GET', '/api/dunning/cases/{id}', `/api/dunning/cases/${cases.data[0].id}`);
  assert.equal(withSteps.steps.length, 1);
  const pastDue = await ok('GET', '/api/dunning/past-due', '/api/dunning/past-due');
  assert.equal(pastDue.data.length, 1);
  const upcoming = await ok('GET', '/api/dunning/upcoming', '/api/dunning/upcoming');
  assert.equal(upcoming.data.length, 1);
  await ok('PUT', '/api/subscriptions/{id}/cancel', `/api/subscriptions/${sub.id}/cancel`);

  // An invoice (issued as the subscription flows issue them), read, written off, then voided.
  const invoice = await issueTestInvoice(app, sub.id, { periodStart: '2030-01-15T10:00:00.000Z' });
  await ok('GET', '/api/invoices/{id}', `/api/invoices/${invoice.id}`);
  await ok('GET', '/api/invoices', '/api/invoices');
  await ok('POST', '/api/invoices/{id}/mark-uncollectible', `/api/invoices/${invoice.id}/mark-uncollectible`);
  await ok('POST', '/api/invoices/{id}/void', `/api/invoices/${invoice.id}/void`);

  const endpoint = await ok('POST', '/api/webhooks', '/api/webhooks', {
    url: `https://${RECEIVER_HOST}/hooks`,
    events: ['*'],
    secret: 'a-long-enough-secret-for-signing-0123456789',
  });
  await ok('GET', '/api/webhooks/{id}', `/api/webhooks/${endpoint.id}`);
  await ok('GET', '/api/webhooks', '/api/webhooks');
  const delivery = await ok('POST', '/api/webhooks/{id}/test', `/api/webhooks/${endpoint.id}/test`);
  await ok('GET', '/api/webhooks/{id}/deliveries', `/api/webhooks/${endpoint.id}/deliveries`);
  await ok(
    'POST',
    '/api/webhooks/{id}/deliveries/{delivery_id}/retry',
    `/api/webhooks/${endpoint.id}/deliveries/${delivery.id}/retry`,
  );
  await ok('PATCH', '/api/webhooks/{id}', `/api/webhooks/${endpoint.id}`, { status: 'disabled' });

  const key = await ok('POST', '/api/api-keys', '/api/api-keys', { name: 'ci', scope: 'read' });
  await ok('GET', '/api/api-keys/{id}', `/api/api-keys/${key.id}`);
  await ok('GET', '/api/api-keys', '/api/api-keys');
  await ok('POST', '/api/api-keys/{id}/rotate', `/api/api-keys/${key.id}/rotate`);
  await ok('DELETE', '/api/api-keys/{id}', `/api/api-keys/${key.id}`);

  // Every event emitted on the way, and its data against its topic's schema.
  const events = await ok('GET', '/api/events', '/api/events?limit=100');
  const topics = new Set<string>();
  for (const event of events.data) {
    v.eventData(event.topic, event.data);
    topics.add(event.topic);
  }
  await ok('GET', '/api/events/{id}', `/api/events/${events.data[0].id}`);
  for (const topic of [
    'customer.created',
    'customer.updated',
    'subscription.created',
    'subscription.cancelled',
    'payment.succeeded',
    'payment.failed',
    'payment.refunded',
    'dunning.started',
    'dunning.reminder',
    'invoice.created',
    'invoice.marked_uncollectible',
    'invoice.voided',
    'webhook.test',
    'webhook_endpoint.disabled',
  ]) {
    assert.ok(topics.has(topic), `the sample emitted ${topic}`);
  }

  // Errors: 400 (the problem-details body), 401, 404, 409.
  v.response('post', '/api/customers', await json(app, 'POST', '/api/customers', { email: 'not an email' }));
  v.response('post', '/api/customers', await json(app, 'POST', '/api/customers', { email: 'ada@example.com' }));
  v.response('get', '/api/customers', await json(app, 'GET', '/api/customers', undefined, null));
  v.response('get', '/api/customers/{id}', await json(app, 'GET', '/api/customers/cus_missing'));
  v.response('put', '/api/subscriptions/{id}/cancel', await json(app, 'PUT', `/api/subscriptions/${sub.id}/cancel`));
  v.response('post', '/api/invoices/{id}/void', await json(app, 'POST', `/api/invoices/${invoice.id}/void`));
});

test('every example in /openapi.json is valid against its schema', async (t) => {
  const app = await buildWebhookTestApp(t);
  const doc = (await app.request('GET', '/openapi.json', { key: null })).body;
  const v = documentValidator(doc);
  let checked = 0;
  for (const [name, schema] of Object.entries<any>(doc.components.schemas)) {
    assert.equal(schema.examples?.length, 1, `${name} has one example`);
    v.check({ $ref: `#/components/schemas/${name}` }, schema.examples[0], `components.schemas.${name}`);
    checked += 1;
  }
  const media: [string, any][] = [];
  for (const [path, item] of Object.entries<any>(doc.paths)) {
    for (const [method, operation] of Object.entries<any>(item)) {
      const body = operation.requestBody?.content['application/json'];
      if (body) media.push([`${method} ${path} body`, body]);
      for (const [status, response] of Object.entries<any>(operation.responses)) {
        if (response.$ref) continue; // shared: checked once below
        const content = response.content?.['application/json'];
        if (content) media.push([`${method} ${path} ${status}`, content]);
      }
    }
  }
  for (const [name, response] of Object.entries<any>(doc.components.responses)) {
    media.push([`components.responses.${name}`, response.content['application/json']]);
  }
  for (const [topic, item] of Object.entries<any>(doc.webhooks)) {
    media.push([`webhook ${topic}`, item.post.requestBody.content['application/json']]);
  }
  for (const [where, content] of media) {
    if (content.example === undefined) continue;
    v.check(content.schema, content.example, where);
    checked += 1;
  }
  assert.ok(checked > 100, `checked ${checked} examples`);
  // The checks can fail: a customer without its email, or with a number for a name, is refused.
  const customer = doc.components.schemas.Customer.examples[0];
  const { email: _email, ...withoutEmail } = customer;
  assert.throws(() => v.check({ $ref: '#/components/schemas/Customer' }, withoutEmail, 'no email'), /email/);
  assert.throws(() => v.check({ $ref: '#/components/schemas/Customer' }, { ...customer, name: 7 }, 'name'), /name/);
});
