import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Kysely } from 'kysely';
import { Migrator } from 'kysely/migration';
import { createTestDatabase, ON_POSTGRES, TEST_DATABASE_URL } from '../../../test/helpers/database.ts';
import { findOrCreateCustomerByEmail, updateCustomer } from '../../modules/customers/customers.service.ts';
import { ManualClock } from '../../shared/clock.ts';
import { openDatabase } from '../connect.ts';
import { isUniqueViolation } from '../errors.ts';
import { migrateToLatest } from '../migrate.ts';
import * as m0001 from './0001_foundation.ts';
import * as m0002 from './0002_plans_subscriptions.ts';
import * as m0003 from './0003_provider_events.ts';
import * as m0004 from './0004_webhooks.ts';
import * as m0005 from './0005_idempotency.ts';
import * as m0006 from './0006_dunning.ts';
import * as m0007 from './0007_count_deltas.ts';

const BEFORE_0008 = {
  '0001_foundation': m0001,
  '0002_plans_subscriptions': m0002,
  '0003_provider_events': m0003,
  '0004_webhooks': m0004,
  '0005_idempotency': m0005,
  '0006_dunning': m0006,
  '0007_count_deltas': m0007,
};

function customer(id: string, email: string, createdAt: string, deletedAt: string | null = null) {
  return { id, email, metadata: '{}', created_at: createdAt, updated_at: createdAt, deleted_at: deletedAt };
}

// A well-formed id (the service checks shapes); it sorts before cus_V and cus_X.
const W = 'cus_01JD3Q7Z8X9Y0A1B2C3D4E5F6G';

async function normalizedOf(db: Kysely<any>, id: string): Promise<string> {
  const row = await db.selectFrom('customers').select('email_normalized').where('id', '=', id).executeTakeFirst();
  return row?.email_normalized;
}

test('0008 backfills email_normalized in TypeScript; of live customers that collide, the oldest keeps the email', async (t) => {
  const database = await createTestDatabase();
  t.after(() => database.drop());
  const config = ON_POSTGRES
    ? ({ kind: 'postgres', url: TEST_DATABASE_URL } as const)
    : ({ kind: 'sqlite', path: ':memory:' } as const);
  const handle = openDatabase(config, { schema: database.schema });
  t.after(() => handle.close());
  const db = handle.db as unknown as Kysely<any>;
  const before = new Migrator({
    db,
    provider: { getMigrations: async () => BEFORE_0008 },
    migrationTableSchema: handle.schema,
  });
  const { error } = await before.migrateToLatest();
  assert.ifError(error);

  // 0001's lower(email) index let NFC and NFD spellings of one address both be live.
  const nfc = 'Ädä@example.com';
  const nfd = nfc.normalize('NFD');
  const fillers = Array.from({ length: 520 }, (_, i) =>
    customer(`cus_F${String(i).padStart(4, '0')}`, `Filler${i}@Example.com`, '2026-01-01T00:00:00.000Z'),
  );
  await db.insertInto('customers').values(fillers).execute();
  await db
    .insertInto('customers')
    .values([
      customer('cus_Z', 'ädä@example.com', '2025-12-01T00:00:00.000Z', '2025-12-02T00:00:00.000Z'),
      customer('cus_X', nfc, '2026-01-10T10:00:00.000Z'),
      // Older by id, younger by created_at: created_at decides.
      customer(W, nfd, '2026-01-10T10:01:00.000Z'),
      customer('cus_V', 'Äda\u0308@example.com', '2026-01-10T10:01:00.000Z'),
    ])
    .execute();

  assert.ok((await migrateToLatest(handle)).includes('0008_customer_email_normalized'));

  assert.equal(await normalizedOf(db, 'cus_X'), 'ädä@example.com');
  assert.equal(await normalizedOf(db, 'cus_V'), 'ädä@example.com (collided cus_V)');
  assert.equal(await normalizedOf(db, W), `ädä@example.com (collided ${W})`);
  assert.equal(await normalizedOf(db, 'cus_Z'), 'ädä@example.com', 'deleted rows get the plain value');
  assert.equal(await normalizedOf(db, 'cus_F0000'), 'filler0@example.com');
  assert.equal(await normalizedOf(db, 'cus_F0519'), 'filler519@example.com');
  const rows = await db.selectFrom('customers').select(['email', 'email_normalized']).execute();
  assert.equal(rows.filter((row) => row.email_normalized === '').length, 0, 'every row backfilled');
  assert.equal(
    (await db.selectFrom('customers').select('email').where('id', '=', W).executeTakeFirst())?.email,
    nfd,
    'the email column keeps what was sent',
  );

  // Lookups by email find the oldest, on both databases.
  const clock = new ManualClock(new Date('2026-01-15T10:00:00.000Z'));
  const found = await handle.db
    .transaction()
    .execute((trx) => findOrCreateCustomerByEmail(trx, clock, 'ÄDÄ@EXAMPLE.COM', null));
  assert.equal(found, 'cus_X');
  // A younger one stays editable; taking the address is a conflict; a new address frees it.
  assert.equal((await updateCustomer(handle.db, clock, W, { name: 'W' })).name, 'W');
  assert.equal(await normalizedOf(db, W), `ädä@example.com (collided ${W})`);
  await assert.rejects(updateCustomer(handle.db, clock, W, { email: nfc }), { status: 409 });
  await updateCustomer(handle.db, clock, W, { email: 'W@example.com' });
  assert.equal(await normalizedOf(db, W), 'w@example.com');

  // The new unique index holds among live rows; the old lower(email) one is gone.
  const now = '2026-01-15T10:00:00.000Z';
  await assert.rejects(
    db
      .insertInto('customers')
      .values({ ...customer('cus_U', 'x@x.io', now), email_normalized: 'filler1@example.com' })
      .execute(),
    (e) => isUniqueViolation(e),
  );
  await db
    .insertInto('customers')
    .values({ ...customer('cus_T', 'FILLER2@example.com', now), email_normalized: 'other' })
    .execute();
  await db
    .insertInto('customers')
    .values({
      ...customer('cus_S', 'y@x.io', now, now),
      email_normalized: 'filler1@example.com',
    })
    .execute();
});
