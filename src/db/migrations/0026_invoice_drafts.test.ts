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

test(
  '0026 on SQLite is all or nothing: failing midway (a referencing row that cannot be put back) leaves every row and the schema as before; then it keeps every row exactly',
  { skip: ON_POSTGRES && 'SQLite only: PostgreSQL alters the table in place' },
  async (t) => {
    const { handle, db } = await databaseBefore(t, '0026_invoice_drafts', CREATED);
    const ids = Array.from({ length: 40 }, (_, i) => `inv_${String(i).padStart(3, '0')}`);
    await db
      .insertInto('invoices')
      .values(ids.map((id, i) => invoice(id, `INV-${String(i + 1).padStart(6, '0')}`, i % 3 ? 'open' : 'paid')))
      .execute();
    await db
      .insertInto('invoice_payment_attempts')
      .values(
        ids.map((id, i) => ({
          id: `pat_${i}`,
          invoice_id: id,
          provider: 'paystack',
          kind: 'charge',
          reference: `ref-${i}`,
          status: 'failed',
          amount: 5000 + i,
          currency: 'NGN',
          created_at: CREATED,
          updated_at: CREATED,
        })),
      )
      .execute();
    await db
      .insertInto('customer_balance_transactions')
      .values(
        ids.map((id, i) => ({
          id: `cbtxn_${i}`,
          customer_id: CUSTOMER,
          currency: 'NGN',
          amount: -(i + 1),
          kind: 'applied_to_invoice',
          // Some credits name no invoice: they are set aside and put back too.
          invoice_id: i % 4 === 0 ? null : id,
          created_at: CREATED,
        })),
      )
      .execute();
    const snapshot = async () => ({
      invoices: await db.selectFrom('invoices').selectAll().orderBy('id').execute(),
      attempts: await db.selectFrom('invoice_payment_attempts').selectAll().orderBy('id').execute(),
      credits: await db.selectFrom('customer_balance_transactions').selectAll().orderBy('id').execute(),
      schema: (
        await sql<{ name: string; sql: string | null }>`select name, sql from sqlite_master order by name`.execute(db)
      ).rows,
      temp: (await sql<{ name: string }>`select name from sqlite_temp_master`.execute(db)).rows,
    });

    // A row whose invoice is gone (written while foreign keys were off): putting it back fails
    // after the old table was dropped and the other rows were set aside.
    await sql`pragma foreign_keys = off`.execute(db);
    await db
      .insertInto('invoice_payment_attempts')
      .values({
        id: 'pat_orphan',
        invoice_id: 'inv_gone',
        provider: 'paystack',
        kind: 'charge',
        reference: 'ref-orphan',
        status: 'failed',
        amount: 1,
        currency: 'NGN',
        created_at: CREATED,
        updated_at: CREATED,
      })
      .execute();
    await sql`pragma foreign_keys = on`.execute(db);
    const withOrphan = await snapshot();
    await assert.rejects(migrateToLatest(handle), /foreign key/i);
    assert.deepEqual(await snapshot(), withOrphan, 'nothing of the failed run remains');
    await assert.rejects(
      db
        .insertInto('invoices')
        .values(invoice('inv_draft', null, 'draft'))
        .execute(),
    );

    await db.deleteFrom('invoice_payment_attempts').where('id', '=', 'pat_orphan').execute();
    const kept = await snapshot();
    assert.deepEqual(await migrateToLatest(handle), ['0026_invoice_drafts']);
    const after = await snapshot();
    // Every column of every row as it was, plus the new column.
    assert.deepEqual(
      after.invoices,
      kept.invoices.map((row) => ({ ...row, finalizes_at: null })),
    );
    assert.deepEqual(after.attempts, kept.attempts);
    assert.deepEqual(after.credits, kept.credits);
    assert.deepEqual(after.temp, []);
    const check = await sql`pragma foreign_key_check`.execute(db);
    assert.deepEqual(check.rows, []);
  },
);
