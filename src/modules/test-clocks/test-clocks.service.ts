// Test clocks through the API (SPEC §11): create, read, and ask for an advance — which the
// worker runs (worker/test-clocks.jobs.ts); deleting a clock with everything attached is the
// billing core's (billing/test-clocks.ts). Every change of a clock and its event commit together.
import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../../db/database.ts';
import { forUpdate } from '../../db/locking.ts';
import { transactionWithRetry } from '../../db/transaction.ts';
import { AppError, NotFoundError, ValidationError } from '../../http/errors.ts';
import { defineList, type ListParams, type Page } from '../../http/lists.ts';
import { pickFields } from '../../http/schemas.ts';
import type { Clock } from '../../shared/clock.ts';
import { isIdOf, newId } from '../../shared/ids.ts';
import { parseTimestamp } from '../../shared/timestamps.ts';
import { emitEvent } from '../events/events.service.ts';
import {
  type AdvanceTestClockInput,
  type CreateTestClockInput,
  TEST_CLOCK_SORT_FIELDS,
  type TestClock,
  testClockSchema,
} from './test-clocks.schemas.ts';
import type { TestClockRow } from '../../db/tables/test-clocks.table.ts';

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

/** Locks test clock `id` for a change. Throws 404 `not_found` for an unknown or malformed id. */
export async function lockTestClock(trx: Transaction<Database>, id: string): Promise<TestClockRow> {
  const query = trx.selectFrom('test_clocks').selectAll().where('id', '=', id);
  const row = isIdOf('testClock', id) ? await forUpdate(query, trx).executeTakeFirst() : undefined;
  if (!row) throw new NotFoundError('test clock', id);
  return row;
}

/**
 * Deletes the row of test clock `id` (`clock_…`, locked by the caller: lockTestClock), the
 * last statement of its delete (SPEC §11 "Deleting", billing/test-clocks.ts), once its
 * customers and what they own are gone. No event.
 */
export async function deleteTestClockRow(trx: Transaction<Database>, id: string): Promise<void> {
  await trx.deleteFrom('test_clocks').where('id', '=', id).execute();
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
