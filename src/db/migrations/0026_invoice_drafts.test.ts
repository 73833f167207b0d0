import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type Kysely, sql } from 'kysely';
import { ON_POSTGRES } from '../../../test/helpers/database.ts';
import { APP_MIGRATIONS, migrateToLatest } from '../migrate.ts';
import { databaseBefore, MIGRATION_CUSTOMER } from '../../../test/helpers/migrations.ts';

const CREATED = '2026-01-15T10:00:00.000Z';
const CUSTOMER = MIGRATION_CUSTOMER;

function invoice(id: string, number: string | null, status: string) {
  return {
    id,
    number,
    customer_id: CUSTOMER,
    subscription_id: null,
    status,
    currency: 'NGN',
    amount_due: 5000,
    amount_paid: 0,
    period_start: CREATED,
    period_end: '2026-02-15T10:00:00.000Z',
    due_at: CREATED,
    lines: '[]',
    hosted_token: `token-${id}`,
    metadata: '{}',
    created_at: CREATED,
    updated_at: CREATED,
  };
}

/** The names of `invoices`' indexes (SQLite's automatic ones included), sorted. */
async function sqliteIndexes(db: Kysely<any>): Promise<string[]> {
  const rows = await sql<{
    name: string;
  }>`select name from sqlite_master where type = 'index' and tbl_name = 'invoices' order by name`.execute(db);
  return rows.rows.map((row) => row.name);
}

test('0026 allows drafts with no number, keeping every invoice, the rows referencing them, their foreign keys and indexes', async (t) => {
  const { handle, db } = await databaseBefore(t, '0026_invoice_drafts', CREATED);
  await db
    .insertInto('invoices')
    .values(invoice('inv_A', 'INV-000001', 'open'))
    .execute();
  await db
    .insertInto('invoice_payment_attempts')
    .values({
      id: 'pat_A',
      invoice_id: 'inv_A',
      provider: 'paystack',
      kind: 'charge',
      reference: 'ref-A',
      status: 'failed',
      amount: 5000,
      currency: 'NGN',
      created_at: CREATED,
      updated_at: CREATED,
    })
    .execute();
  await db
    .insertInto('customer_balance_transactions')
    .values({
      id: 'cbtxn_A',
      customer_id: CUSTOMER,
      currency: 'NGN',
      amount: -100,
      kind: 'applied_to_invoice',
      invoice_id: 'inv_A',
      created_at: CREATED,
    })
    .execute();
  await assert.rejects(
    db
      .insertInto('invoices')
      .values(invoice('inv_B', null, 'draft'))
      .execute(),
  );
  const indexesBefore = ON_POSTGRES ? [] : await sqliteIndexes(db);

  assert.deepEqual(await migrateToLatest(handle), ['0026_invoice_drafts']);

  const kept = await db.selectFrom('invoices').selectAll().where('id', '=', 'inv_A').executeTakeFirstOrThrow();
  assert.deepEqual(
    [kept.number, kept.status, Number(kept.amount_due), kept.hosted_token, kept.finalizes_at],
    ['INV-000001', 'open', 5000, 'token-inv_A', null],
  );
  const attempts = await db.selectFrom('invoice_payment_attempts').select(['id', 'invoice_id']).execute();
  assert.deepEqual(
    attempts.map((row) => [row.id, row.invoice_id]),
    [['pat_A', 'inv_A']],
  );
  const credits = await db.selectFrom('customer_balance_transactions').select(['id', 'invoice_id']).execute();
  assert.deepEqual(
    credits.map((row) => [row.id, row.invoice_id]),
    [['cbtxn_A', 'inv_A']],
  );

  // A draft: no number, a finalization time; numbers stay unique.
  await db
    .insertInto('invoices')
    .values({ ...invoice('inv_B', null, 'draft'), finalizes_at: '2026-01-15T11:00:00.000Z' })
    .execute();
  await db
    .insertInto('invoices')
    .values({ ...invoice('inv_C', null, 'draft'), finalizes_at: '2026-01-15T11:00:00.000Z' })
    .execute();
  await assert.rejects(
    db
      .insertInto('invoices')
      .values(invoice('inv_D', 'INV-000001', 'open'))
      .execute(),
  );
  await assert.rejects(
    db
      .insertInto('invoices')
      .values(invoice('inv_E', 'INV-000009', 'pending'))
      .execute(),
  );
  // The references still hold: to the new table, still enforced.
  await assert.rejects(
    db
      .insertInto('customer_balance_transactions')
      .values({
        id: 'cbtxn_B',
        customer_id: CUSTOMER,
        currency: 'NGN',
        amount: -100,
        kind: 'applied_to_invoice',
        invoice_id: 'inv_gone',
        created_at: CREATED,
      })
      .execute(),
    /foreign key/i,
  );
  await assert.rejects(db.deleteFrom('invoices').where('id', '=', 'inv_A').execute(), /foreign key/i);
  if (!ON_POSTGRES) {
    assert.deepEqual(await sqliteIndexes(db), [...indexesBefore, 'invoices_due_for_finalization'].sort());
    const check = await sql<{ foreign_key_check: unknown }>`pragma foreign_key_check`.execute(db);
    assert.deepEqual(check.rows, []);
  }

  // Down: refused (nothing changes) while a draft exists; then back to the schema before.
  const { down } = APP_MIGRATIONS['0026_invoice_drafts']!;
  await assert.rejects(db.transaction().execute((trx) => down!(trx)));
  assert.equal((await db.selectFrom('invoices').select('id').execute()).length, 3);
  await db.deleteFrom('invoices').where('status', '=', 'draft').execute();
  await db.transaction().execute((trx) => down!(trx));
  await assert.rejects(
    db
      .insertInto('invoices')
      .values(invoice('inv_B', null, 'open'))
      .execute(),
  );
  assert.deepEqual(
    (await db.selectFrom('invoice_payment_attempts').select('invoice_id').execute()).map((row) => row.invoice_id),
    ['inv_A'],
  );
  if (!ON_POSTGRES) assert.deepEqual(await sqliteIndexes(db), indexesBefore);
});
