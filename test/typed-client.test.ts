// The typed client of examples/: it runs against the real app on a real port,
// and the types it is checked with (examples/api.d.ts) are what openapi-typescript generates
// from the document the app serves today.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { runExample } from '../examples/typed-client.ts';
import { CLIENT_TYPES_FILE, clientTypes } from '../scripts/generate-client.ts';
import { ADMIN_KEY, buildTestApp } from './helpers/app.ts';

test('examples/typed-client.ts creates, lists, subscribes, cancels and reads typed 404 and 400 errors', async (t) => {
  const app = await buildTestApp(t);
  for (let i = 0; i < 6; i += 1) {
    await app.request('POST', '/api/customers', { body: { email: `existing${i}@example.com` } });
  }
  const lines: string[] = [];
  const result = await runExample(app.baseUrl, ADMIN_KEY, (line) => lines.push(line));
  assert.match(result.customer.id, /^cus_/);
  assert.deepEqual(result.listed, { count: 5, limit: 5, total: 7 });
  assert.equal(result.subscription.customer_id, result.customer.id);
  assert.equal(result.subscription.status, 'trialing');
  assert.equal(result.cancelled.status, 'cancelled');
  assert.equal(result.cancelled.cancellation_reason, 'requested');
  assert.deepEqual([result.notFound.status, result.notFound.code], [404, 'not_found']);
  assert.deepEqual(result.invalid, { status: 400, fields: ['email'] });
  assert.equal(lines.length, 7);
  const stored = await app.request('GET', `/api/subscriptions/${result.subscription.id}`);
  assert.equal(stored.body.status, 'cancelled');
});

test('examples/typed-client.ts runs as a script with BILLING_URL and BILLING_API_KEY', async (t) => {
  const app = await buildTestApp(t);
  const child = spawn(process.execPath, ['examples/typed-client.ts'], {
    env: { ...process.env, BILLING_URL: app.baseUrl, BILLING_API_KEY: ADMIN_KEY },
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  const code = await new Promise((resolve) => child.on('close', resolve));
  assert.equal(code, 0, stderr);
  assert.match(stdout, /^created customer cus_/m);
  assert.match(stdout, /^cancelled sub_\w+: cancelled/m);
  assert.match(stdout, /→ 404 not_found/);
  assert.match(stdout, /→ 400 validation_error: invalid email/);
});

test('examples/api.d.ts is what `npm run generate:client` makes from the served document', async (t) => {
  const app = await buildTestApp(t);
  const { servers: _servers, ...document } = (await app.request('GET', '/openapi.json', { key: null })).body;
  const expected = await clientTypes(document);
  const committed = readFileSync(CLIENT_TYPES_FILE, 'utf8');
  assert.ok(committed === expected, 'examples/api.d.ts is out of date: run `npm run generate:client` and commit it');
  assert.match(committed, /listCustomers: \{/);
  assert.match(committed, /limit\?: number;/);
});
