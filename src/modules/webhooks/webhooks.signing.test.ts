import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { webhookBody, webhookHeaders } from './webhooks.signing.ts';

const SECRET = 'whsec_not-base64 ünïcode secret';

test('the body is {"topic","data"} around the stored data bytes, unchanged', () => {
  const data = '{"id":"cus_1","name":"Zoë","amount":5000,"nested":{"a":[1,2]}}';
  const body = webhookBody('customer.created', data);
  assert.equal(body, `{"topic":"customer.created","data":${data}}`);
  assert.deepEqual(JSON.parse(body), { topic: 'customer.created', data: JSON.parse(data) });
});

test('signed headers verify with the standardwebhooks package and a recomputed HMAC', () => {
  const now = new Date();
  const body = webhookBody('payment.succeeded', '{"id":"pay_1","amount":5000}');
  const headers = webhookHeaders('evt_01JD3Q7Z8X9Y0A1B2C3D4E5F6G', body, SECRET, now);
  assert.equal(headers['content-type'], 'application/json');
  assert.match(headers['user-agent']!, /^billing-api-webhooks\//);
  assert.equal(headers['x-event-id'], 'evt_01JD3Q7Z8X9Y0A1B2C3D4E5F6G');
  assert.equal(headers['x-timestamp'], now.toISOString());
  assert.equal(headers['x-signature'], createHmac('sha256', SECRET).update(body).digest('hex'));
  assert.match(headers['x-signature']!, /^[0-9a-f]{64}$/);
  assert.equal(headers['webhook-id'], 'evt_01JD3Q7Z8X9Y0A1B2C3D4E5F6G');
  assert.equal(headers['webhook-timestamp'], String(Math.floor(now.getTime() / 1000)));
  // The secret's UTF-8 bytes are the key (SPEC §6), so the verifier gets them raw.
  const verifier = new Webhook(Buffer.from(SECRET, 'utf8'), { format: 'raw' });
  assert.deepEqual(verifier.verify(body, headers), JSON.parse(body));
  assert.throws(() => verifier.verify(`${body} `, headers), /No matching signature/);
  assert.throws(
    () => new Webhook(Buffer.from('another secret'), { format: 'raw' }).verify(body, headers),
    /No matching signature/,
  );
});

test('without a secret there are no signature headers', () => {
  const headers = webhookHeaders('evt_1', '{}', null, new Date());
  assert.deepEqual(Object.keys(headers).sort(), ['content-type', 'user-agent', 'x-event-id', 'x-timestamp']);
});
