import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp, connectSecondInstance } from '../../../test/helpers/app.ts';
import { createCustomer } from '../../../test/helpers/factories.ts';
import { saveTestPaymentMethod } from '../../../test/helpers/payment-methods.ts';
import { findDefaultPaymentMethod, type ReportedPaymentMethod, savePaymentMethod } from './payment-methods.ts';

const ON_POSTGRES = Boolean(process.env.TEST_DATABASE_URL);

function card(customerId: string, fingerprint: string, credential: string): ReportedPaymentMethod {
  return {
    customerId,
    provider: 'paystack',
    fingerprint,
    credential,
    providerCustomerId: null,
    email: 'payer@example.com',
    type: 'card',
    brand: 'visa',
    last4: '4081',
    expMonth: 12,
    expYear: 2030,
  };
}

test('a saved credential is stored encrypted and only findDefaultPaymentMethod opens it', async (t) => {
  const app = await buildTestApp(t);
  const customer = await createCustomer(app);
  await app.deps.db
    .transaction()
    .execute((trx) => savePaymentMethod(trx, app.deps, card(customer.id, 'SIG_1', 'AUTH_secret_1')));
  const stored = await app.deps.db.selectFrom('payment_methods').selectAll().executeTakeFirstOrThrow();
  assert.match(stored.id, /^pm_/);
  assert.ok(!stored.credential.includes('AUTH_secret_1'), 'ciphertext at rest');
  assert.match(stored.credential, /^v1\./);
  const method = await findDefaultPaymentMethod(app.deps.db, app.deps, customer.id);
  assert.deepEqual(method, {
    id: stored.id,
    provider: 'paystack',
    credential: 'AUTH_secret_1',
    providerCustomerId: null,
    email: 'payer@example.com',
  });
  assert.equal(await findDefaultPaymentMethod(app.deps.db, app.deps, (await createCustomer(app)).id), undefined);
});

test('the same card reported again is the same method and does not take the default back', async (t) => {
  const app = await buildTestApp(t);
  const customer = await createCustomer(app);
  const save = (fingerprint: string, credential: string) =>
    app.deps.db
      .transaction()
      .execute((trx) => savePaymentMethod(trx, app.deps, card(customer.id, fingerprint, credential)));
  const first = await save('SIG_A', 'AUTH_a');
  assert.equal(first.created, true);
  app.clock.advance(1000);
  const second = await save('SIG_B', 'AUTH_b');
  assert.equal(second.created, true);
  assert.equal(
    (await findDefaultPaymentMethod(app.deps.db, app.deps, customer.id))?.credential,
    'AUTH_b',
    'latest is the default',
  );
  app.clock.advance(1000);
  const again = await save('SIG_A', 'AUTH_a_again');
  assert.equal(again.created, false);
  assert.equal(again.row.id, first.row.id);
  assert.equal((await findDefaultPaymentMethod(app.deps.db, app.deps, customer.id))?.credential, 'AUTH_b');
  const count = await app.deps.db
    .selectFrom('payment_methods')
    .select((eb) => eb.fn.countAll().as('n'))
    .executeTakeFirstOrThrow();
  assert.equal(Number(count.n), 2);
});

test('a detached method is never charged; the same card can be saved again afterwards', async (t) => {
  const app = await buildTestApp(t);
  const customer = await createCustomer(app);
  const row = await saveTestPaymentMethod(app, customer.id, 'stripe', { credential: 'pm_card_1' });
  await app.deps.db.updateTable('payment_methods').set({ status: 'detached' }).where('id', '=', row.id).execute();
  assert.equal(await findDefaultPaymentMethod(app.deps.db, app.deps, customer.id), undefined);
  const again = await saveTestPaymentMethod(app, customer.id, 'stripe', { credential: 'pm_card_1' });
  assert.notEqual(again.id, row.id);
  assert.equal((await findDefaultPaymentMethod(app.deps.db, app.deps, customer.id))?.credential, 'pm_card_1');
});

test('a credential saved under a key no longer configured is unreadable (null), never garbage, never thrown', async (t) => {
  const app = await buildTestApp(t);
  const customer = await createCustomer(app);
  const row = await saveTestPaymentMethod(app, customer.id, 'paystack', { credential: 'AUTH_kept' });
  const other = Buffer.alloc(32, 1);
  const rotated = { config: { dataEncryptionKey: other, dataEncryptionKeys: [other] } };
  const method = await findDefaultPaymentMethod(app.deps.db, rotated, customer.id);
  assert.deepEqual([method?.id, method?.credential], [row.id, null]);
  // With the old key listed after the new one, it opens again.
  const both = {
    config: { dataEncryptionKey: other, dataEncryptionKeys: [other, app.deps.config.dataEncryptionKey!] },
  };
  assert.equal((await findDefaultPaymentMethod(app.deps.db, both, customer.id))?.credential, 'AUTH_kept');
});

test('PostgreSQL: two reports of one card at once make one method', { skip: !ON_POSTGRES }, async (t) => {
  const app = await buildTestApp(t);
  const second = await connectSecondInstance(app);
  t.after(() => second.close());
  const customer = await createCustomer(app);
  const results = await Promise.all(
    [app.deps, second].map((deps) =>
      deps.db.transaction().execute((trx) => savePaymentMethod(trx, deps, card(customer.id, 'SIG_RACE', 'AUTH_race'))),
    ),
  );
  assert.deepEqual(results.map((r) => r.created).sort(), [false, true]);
  assert.equal(results[0]!.row.id, results[1]!.row.id);
});
