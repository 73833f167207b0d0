// Test clocks through the API (SPEC §11): create, read, delete with everything attached, and
// ask for an advance — which the worker runs (test-clocks.jobs.ts). Every change of a clock
// and its event commit together.
import type { Kysely, Transaction } from 'kysely';
import { addToCount } from '../../db/counts.ts';
import type { Database } from '../../db/database.ts';
import { forUpdate } from '../../db/locking.ts';
import { transactionWithRetry } from '../../db/transaction.ts';
import { AppError, NotFoundError, ValidationError } from '../../http/errors.ts';
import { defineList, type ListParams, type Page } from '../../http/lists.ts';
import { pickFields } from '../../http/schemas.ts';
import type { Clock } from '../../shared/clock.ts';
import { isIdOf, newId } from '../../shared/ids.ts';
import { findChargesInFlight } from '../collection/payment-attempts.ts';
import { parseTimestamp } from '../../shared/timestamps.ts';
import { emitEvent } from '../events/events.service.ts';
import { deleteTestClockInvoiceNumbers } from '../invoices/invoices.lifecycle.ts';
import {
  type AdvanceTestClockInput,
  type CreateTestClockInput,
  TEST_CLOCK_SORT_FIELDS,
  type TestClock,
  testClockSchema,
} from './test-clocks.schemas.ts';
import type { TestClockRow } from './test-clocks.table.ts';

/** How far one advance may go: 2 calendar years past the clock's time (Stripe's bound). */
export const MAX_ADVANCE_YEARS = 2;

/** A test_clocks row as the API shows it. */
export function toTestClock(row: TestClockRow): TestClock {
  return pickFields(testClockSchema, row);
}

/**
 * Creates a `ready` clock at `frozen_time` (any storable instant, past or future; the route's
 * schema bounds it to [MIN_TIMESTAMP, MAX_TIMESTAMP], SPEC §2 "Time").
 */
export async function createTestClock(
  db: Kysely<Database>,
  clock: Clock,
  input: CreateTestClockInput,
): Promise<TestClock> {
  const now = clock.now().toISOString();
  const frozen = new Date(parseTimestamp(input.frozen_time)).toISOString();
  const row: TestClockRow = {
    id: newId('testClock'),
    name: input.name ?? null,
    frozen_time: frozen,
    reached_time: frozen,
    status: 'ready',
    lease_token: null,
    lease_expires_at: null,
    created_at: now,
    updated_at: now,
  };
  await db.insertInto('test_clocks').values(row).execute();
  return toTestClock(row);
}

/** One clock. Throws 404 `not_found` for unknown or malformed ids. */
export async function getTestClock(db: Kysely<Database>, id: string): Promise<TestClock> {
  const row = isIdOf('testClock', id)
    ? await db.selectFrom('test_clocks').selectAll().where('id', '=', id).executeTakeFirst()
    : undefined;
  if (!row) throw new NotFoundError('test clock', id);
  return toTestClock(row);
}

const testClocksList = defineList({
  from: (db) => db.selectFrom('test_clocks'),
  select: (query) => query.selectAll(),
  sortable: TEST_CLOCK_SORT_FIELDS,
  map: (rows) => rows.map(toTestClock),
});

/** A page of clocks (SPEC §2 "Lists"), sortable by `created_at` or `frozen_time`. */
export async function listTestClocks(db: Kysely<Database>, params: ListParams): Promise<Page<TestClock>> {
  return testClocksList.page(db, params);
}

async function lockTestClock(trx: Transaction<Database>, id: string): Promise<TestClockRow> {
  const query = trx.selectFrom('test_clocks').selectAll().where('id', '=', id);
  const row = isIdOf('testClock', id) ? await forUpdate(query, trx).executeTakeFirst() : undefined;
  if (!row) throw new NotFoundError('test clock', id);
  return row;
}

/** `time` plus MAX_ADVANCE_YEARS calendar years (UTC). */
function advanceLimit(time: Date): Date {
  const limit = new Date(time.getTime());
  limit.setUTCFullYear(limit.getUTCFullYear() + MAX_ADVANCE_YEARS);
  return limit;
}

/**
 * Asks the worker to advance clock `id` to `input.frozen_time`: status `advancing`,
 * `frozen_time` the target, `test_clock.advancing` (real time). Returns the clock. Throws
 * 404 for unknown ids; 409 `conflict` while an advance runs; 400 `validation_error` for a
 * time not later than the clock's, or more than 2 years after it.
 */
export async function advanceTestClock(
  db: Kysely<Database>,
  clock: Clock,
  id: string,
  input: AdvanceTestClockInput,
): Promise<TestClock> {
  return transactionWithRetry(db, async (trx) => {
    const row = await lockTestClock(trx, id);
    if (row.status === 'advancing') {
      throw new AppError('conflict', `test clock ${id} is advancing already; wait until it is ready`);
    }
    const current = new Date(row.frozen_time);
    const target = new Date(parseTimestamp(input.frozen_time));
    if (target.getTime() <= current.getTime()) {
      throw new ValidationError(`frozen_time must be later than the clock's time (${row.frozen_time})`, 'frozen_time');
    }
    if (target.getTime() > advanceLimit(current).getTime()) {
      throw new ValidationError(
        `frozen_time must be at most ${MAX_ADVANCE_YEARS} years after the clock's time (${row.frozen_time})`,
        'frozen_time',
      );
    }
    const now = clock.now().toISOString();
    const changes = {
      frozen_time: target.toISOString(),
      status: 'advancing' as const,
      lease_token: null,
      lease_expires_at: null,
      updated_at: now,
    };
    await trx.updateTable('test_clocks').set(changes).where('id', '=', id).execute();
    const advancing = toTestClock({ ...row, ...changes });
    await emitEvent(trx, clock, 'test_clock.advancing', advancing);
    return advancing;
  });
}

/**
 * Deletes clock `id` and every customer attached to it, with their subscriptions, invoices
 * (and payment attempts, and the clock's invoice number sequence), dunning cases (and steps),
 * payment methods and provider subscription references;
 * payments recorded for them stay, detached (customer, subscription and invoice null), and
 * so do the events already emitted. Locks parents before children (db/locking.ts) so a
 * worker step in flight finishes first and the next one finds nothing. Throws 404 for
 * unknown ids; 409 `conflict` (nothing deleted; `details.charges_in_flight`: attempt id,
 * invoice id, status) while a charge of its invoices is in flight with the provider
 * (findChargesInFlight, SPEC §11 "Deleting"): its answer would have nowhere to go. Any
 * status otherwise: deleting an advancing clock stops its advance.
 */
export async function deleteTestClock(db: Kysely<Database>, id: string): Promise<void> {
  await transactionWithRetry(db, async (trx) => {
    await lockTestClock(trx, id);
    const ids = async (table: 'customers' | 'subscriptions' | 'invoices' | 'dunning_cases') =>
      (
        await forUpdate(trx.selectFrom(table).select('id').where('test_clock_id', '=', id).orderBy('id'), trx).execute()
      ).map((row) => row.id);
    const customers = await ids('customers');
    const liveCustomers = await trx
      .selectFrom('customers')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('test_clock_id', '=', id)
      .where('deleted_at', 'is', null)
      .executeTakeFirstOrThrow();
    const subscriptions = await ids('subscriptions');
    const invoices = await ids('invoices');
    // Under the invoices' locks: a charge claimed before is visible now, a later claim skips them.
    const inFlight = await findChargesInFlight(trx, invoices);
    if (inFlight.length > 0) {
      throw new AppError(
        'conflict',
        `test clock ${id} has ${inFlight.length} charge(s) in flight with the provider; delete it once the worker has their outcome`,
        {
          charges_in_flight: inFlight.map((attempt) => ({
            attempt_id: attempt.id,
            invoice_id: attempt.invoice_id,
            status: attempt.status,
          })),
        },
      );
    }
    const cases = await ids('dunning_cases');
    if (cases.length > 0) {
      await trx.deleteFrom('dunning_steps').where('case_id', 'in', cases).execute();
      await trx.deleteFrom('dunning_cases').where('id', 'in', cases).execute();
    }
    if (customers.length > 0) {
      await trx
        .updateTable('payments')
        .set({ customer_id: null, subscription_id: null, invoice_id: null })
        .where('customer_id', 'in', customers)
        .execute();
    }
    // Their refunds stay with the payments, back on real time: the real-time worker resolves
    // a pending one still without a provider answer.
    await trx.updateTable('refunds').set({ test_clock_id: null }).where('test_clock_id', '=', id).execute();
    if (subscriptions.length > 0) {
      await trx
        .updateTable('payments')
        .set({ subscription_id: null, invoice_id: null })
        .where('subscription_id', 'in', subscriptions)
        .execute();
      await trx.deleteFrom('provider_subscription_references').where('subscription_id', 'in', subscriptions).execute();
    }
    if (invoices.length > 0) {
      await trx.updateTable('payments').set({ invoice_id: null }).where('invoice_id', 'in', invoices).execute();
      await trx.deleteFrom('invoice_payment_attempts').where('invoice_id', 'in', invoices).execute();
      await trx.deleteFrom('invoices').where('id', 'in', invoices).execute();
      await addToCount(trx, 'invoices', -invoices.length);
    }
    await deleteTestClockInvoiceNumbers(trx, id);
    if (subscriptions.length > 0) {
      await trx.deleteFrom('subscriptions').where('id', 'in', subscriptions).execute();
      await addToCount(trx, 'subscriptions', -subscriptions.length);
    }
    if (customers.length > 0) {
      await trx.deleteFrom('payment_methods').where('customer_id', 'in', customers).execute();
      await trx.deleteFrom('customers').where('id', 'in', customers).execute();
      await addToCount(trx, 'customers', -Number(liveCustomers.n));
    }
    await trx.deleteFrom('test_clocks').where('id', '=', id).execute();
  });
}
