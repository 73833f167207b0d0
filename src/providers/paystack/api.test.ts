import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import { FakePaystack } from '../../../test/helpers/fake-paystack.ts';
import { PAYSTACK_SECRET } from '../../../test/helpers/provider-events.ts';
import { PaystackApi } from './api.ts';
import { ProviderCallError } from '../provider-api.ts';

async function client(t: TestContext, timeoutMs = 2000) {
  const fake = await FakePaystack.start(t);
  const api = new PaystackApi({ baseUrl: fake.url, secretKey: PAYSTACK_SECRET, timeoutMs });
  t.after(() => api.close());
  return { fake, api };
}

const INPUT = {
  email: 'ada@example.com',
  amount: 5000,
  currency: 'NGN',
  reference: 'pat-01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
  metadata: { invoice_id: 'inv_01JD3Q7Z8X9Y0A1B2C3D4E5F6G' },
};

test('verifyTransaction reads the status of a reference; a reference Paystack does not know is null', async (t) => {
  const { fake, api } = await client(t);
  const created = await api.initializeTransaction(INPUT);
  assert.equal(created.reference, INPUT.reference);
  const before = await api.verifyTransaction(INPUT.reference);
  assert.equal(before?.status, 'abandoned');
  fake.settle(INPUT.reference, 'success');
  const after = await api.verifyTransaction(INPUT.reference);
  assert.deepEqual(
    [after?.status, after?.amount, after?.currency, after?.gateway_response],
    ['success', 5000, 'NGN', 'Successful'],
  );
  assert.deepEqual(after?.data.metadata, INPUT.metadata);
  assert.equal(await api.verifyTransaction('pat-unknown'), null);
  assert.deepEqual(
    fake.calls.map((c) => [c.method, c.path, c.headers.authorization]),
    [
      ['POST', '/transaction/initialize', `Bearer ${PAYSTACK_SECRET}`],
      ['GET', `/transaction/verify/${INPUT.reference}`, `Bearer ${PAYSTACK_SECRET}`],
      ['GET', `/transaction/verify/${INPUT.reference}`, `Bearer ${PAYSTACK_SECRET}`],
      ['GET', '/transaction/verify/pat-unknown', `Bearer ${PAYSTACK_SECRET}`],
    ],
  );
});

test('a second initialize with the same reference is refused by Paystack: refused, with its code', async (t) => {
  const { api } = await client(t);
  await api.initializeTransaction(INPUT);
  await assert.rejects(api.initializeTransaction(INPUT), (error: unknown) => {
    assert.ok(error instanceof ProviderCallError);
    assert.equal(error.failure, 'refused');
    assert.equal(error.providerCode, 'duplicate_reference');
    assert.equal(error.outcomeUnknown, false);
    assert.equal(error.message, 'Paystack refused to initialize the transaction: Duplicate Transaction Reference');
    return true;
  });
});

test('verify: no answer in time is a timeout, a 5xx or an unreadable 200 is unavailable, both outcome-unknown', async (t) => {
  const { fake, api } = await client(t, 200);
  const failures: [string, boolean][] = [];
  for (const answer of [
    'hang',
    { status: 500, body: { status: false, message: 'x' } },
    { status: 200, body: { ok: 1 } },
  ] as const) {
    fake.queue(answer);
    await assert.rejects(api.verifyTransaction('pat-x'), (error: unknown) => {
      assert.ok(error instanceof ProviderCallError);
      failures.push([error.failure, error.outcomeUnknown]);
      return true;
    });
  }
  assert.deepEqual(failures, [
    ['timeout', true],
    ['unavailable', true],
    ['unavailable', true],
  ]);
});

test('an unreachable Paystack is unavailable, and the message holds no key', async (t) => {
  const { fake } = await client(t);
  await fake.close();
  const api = new PaystackApi({ baseUrl: fake.url, secretKey: PAYSTACK_SECRET, timeoutMs: 2000 });
  t.after(() => api.close());
  await assert.rejects(api.initializeTransaction(INPUT), (error: unknown) => {
    assert.ok(error instanceof ProviderCallError);
    assert.equal(error.failure, 'unavailable');
    assert.match(error.message, /^Paystack could not be reached/);
    assert.ok(!error.message.includes(PAYSTACK_SECRET));
    return true;
  });
});

test("chargeAuthorization: Paystack's paused answer (data.paused, no data.status) is a paused charge with its link", async (t) => {
  const { fake, api } = await client(t);
  fake.defaultChargeOutcome = 'paused';
  const answer = await api.chargeAuthorization({ ...INPUT, authorization_code: 'AUTH_pmx3mgawyd' });
  assert.equal(answer.status, 'paused');
  assert.equal(answer.reference, INPUT.reference);
  assert.match(String(answer.authorization_url), /^https:\/\/checkout\.paystack\.com\/resume\/\w+$/);
  assert.match(String(answer.access_code), /^\w+$/);
  assert.equal(answer.id, null, 'no transaction id yet');
});
