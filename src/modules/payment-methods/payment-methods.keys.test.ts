// Key rotation of stored secrets (SPEC §10 "Saved payment methods", docs/operations.md
// "Rotating DATA_ENCRYPTION_KEY"): counting secrets per key, the start-up warning, and the
// re-encryption `billing rotate-data-key` runs — on both databases.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { buildTestApp, type TestApp } from '../../../test/helpers/app.ts';
import { createCustomer } from '../../../test/helpers/factories.ts';
import { saveTestPaymentMethod } from '../../../test/helpers/payment-methods.ts';
import { encryptSecret } from '../../shared/encryption.ts';
import { checkStoredSecrets, countStoredSecrets, reencryptStoredSecrets } from './payment-methods.keys.ts';
import { findDefaultPaymentMethod, findPaymentMethodToCharge } from './payment-methods.ts';

/** Three saved methods under the app's key (one detached), and one under a key nobody has. */
async function storedSecrets(app: TestApp) {
  const saved = [];
  for (let i = 0; i < 3; i++) {
    const customer = await createCustomer(app);
    saved.push(await saveTestPaymentMethod(app, customer.id, i === 1 ? 'stripe' : 'paystack'));
  }
  await app.deps.db.updateTable('payment_methods').set({ status: 'detached' }).where('id', '=', saved[2]!.id).execute();
  const lost = await saveTestPaymentMethod(app, (await createCustomer(app)).id, 'paystack');
  await app.deps.db
    .updateTable('payment_methods')
    .set({ credential: encryptSecret(randomBytes(32), 'AUTH_lost') })
    .where('id', '=', lost.id)
    .execute();
  return { saved, lost };
}

function captureLog() {
  const lines: { level: string; fields: object; message: string }[] = [];
  return {
    lines,
    warn: (fields: object, message: string) => lines.push({ level: 'warn', fields, message }),
    info: (fields: object, message: string) => lines.push({ level: 'info', fields, message }),
  };
}

test('rotation re-encrypts every secret an older key opens with the newest, leaves the rest, and can run again', async (t) => {
  const app = await buildTestApp(t);
  const { saved, lost } = await storedSecrets(app);
  const old = app.deps.config.dataEncryptionKey!;
  const newest = randomBytes(32);
  const keys = [newest, old];
  const before = await app.deps.db.selectFrom('payment_methods').select(['id', 'credential', 'updated_at']).execute();

  assert.deepEqual(await countStoredSecrets(app.deps.db, keys), { total: 4, byKey: [0, 3], unreadable: 1 });
  assert.deepEqual(await reencryptStoredSecrets(app.deps.db, keys), { reencrypted: 3, current: 0, unreadable: 1 });
  assert.deepEqual(await countStoredSecrets(app.deps.db, keys), { total: 4, byKey: [3, 0], unreadable: 1 });
  assert.deepEqual(await reencryptStoredSecrets(app.deps.db, keys), { reencrypted: 0, current: 3, unreadable: 1 });

  // The old key can go: every method opens with the newest alone, detached ones too.
  const onlyNewest = { config: { dataEncryptionKey: newest, dataEncryptionKeys: [newest] } };
  for (const row of saved) {
    const method = await findPaymentMethodToCharge(app.deps.db, onlyNewest, row.id);
    assert.match(String(method?.credential), /^(AUTH|pm)_test/);
  }
  assert.equal(
    (await findDefaultPaymentMethod(app.deps.db, onlyNewest, saved[0]!.customer_id))?.credential !== null,
    true,
  );
  const after = await app.deps.db.selectFrom('payment_methods').select(['id', 'credential', 'updated_at']).execute();
  for (const row of after) {
    const was = before.find((b) => b.id === row.id)!;
    assert.equal(row.updated_at, was.updated_at, 'nothing the API shows changed');
    if (row.id === lost.id) assert.equal(row.credential, was.credential, 'an unreadable secret is left as it is');
    else assert.notEqual(row.credential, was.credential);
  }
});

test('start-up check: one warn line with counts when stored secrets open with no key; never a secret', async (t) => {
  const app = await buildTestApp(t);
  await storedSecrets(app);
  const log = captureLog();
  await checkStoredSecrets(app.deps.db, app.deps.config.dataEncryptionKeys, log);
  assert.equal(log.lines.length, 1);
  const [line] = log.lines;
  assert.equal(line!.level, 'warn');
  assert.deepEqual(line!.fields, { stored_secrets: 4, unreadable: 1, by_key: [3] });
  assert.match(
    line!.message,
    /^1 of 4 stored secrets \(saved payment methods\) open with no key of DATA_ENCRYPTION_KEYS/,
  );
  assert.ok(!JSON.stringify(log.lines).includes('AUTH_'));
});

test('start-up check: an info line while secrets are under an older key; nothing once all are under the newest', async (t) => {
  const app = await buildTestApp(t);
  await saveTestPaymentMethod(app, (await createCustomer(app)).id, 'paystack');
  const keys = [randomBytes(32), app.deps.config.dataEncryptionKey!];
  const log = captureLog();
  await checkStoredSecrets(app.deps.db, keys, log);
  assert.deepEqual(
    log.lines.map((l) => [l.level, l.fields]),
    [['info', { stored_secrets: 1, unreadable: 0, by_key: [0, 1] }]],
  );
  await reencryptStoredSecrets(app.deps.db, keys);
  log.lines.length = 0;
  await checkStoredSecrets(app.deps.db, keys, log);
  assert.deepEqual(log.lines, []);
});
