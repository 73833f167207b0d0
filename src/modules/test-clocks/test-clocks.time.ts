// Whose time a piece of work runs at (SPEC §11): rows of a customer attached to a test clock
// are stamped with that clock's time, everything else with the real clock. The one lookup
// every service makes after reading the row it changes (which carries `test_clock_id`), so a
// real customer's request costs nothing more: no clock id, no round trip.
import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../../db/database.ts';
import { type Clock, realClockOf } from '../../shared/clock.ts';
import { isIdOf } from '../../shared/ids.ts';

/**
 * A clock stopped at `at`, stamping the objects of test clock `testClockId`; `real` is the
 * real clock behind it (kept as `real`: an event row records when it was written in real time).
 */
export function testClockTime(testClockId: string, at: Date, real: Clock): Clock {
  const ms = at.getTime();
  return { testClockId, now: () => new Date(ms), real: realClockOf(real) };
}

/**
 * The clock for work on rows of test clock `testClockId`: `ctx.clock` itself when it is null
 * (real time; no database read), else the test clock's time reached (`reached_time`: during
 * an advance, the step being run). Throws when the clock no longer exists (deleted with its
 * customers: the caller's row is gone too).
 */
export async function clockFor(
  db: Kysely<Database> | Transaction<Database>,
  ctx: { clock: Clock },
  testClockId: string | null,
): Promise<Clock> {
  if (testClockId === null) return ctx.clock;
  const row = await db
    .selectFrom('test_clocks')
    .select('reached_time')
    .where('id', '=', testClockId)
    .executeTakeFirst();
  if (!row) throw new Error(`test clock ${testClockId} is missing`);
  return testClockTime(testClockId, new Date(row.reached_time), ctx.clock);
}

/** `ctx` with its clock replaced by clockFor's (the same object when `testClockId` is null). */
export async function withClockFor<C extends { clock: Clock }>(
  db: Kysely<Database> | Transaction<Database>,
  ctx: C,
  testClockId: string | null,
): Promise<C> {
  if (testClockId === null) return ctx;
  return { ...ctx, clock: await clockFor(db, ctx, testClockId) };
}

/** True when test clock `id` exists (false for malformed ids, without a round trip). */
export async function testClockExists(db: Kysely<Database> | Transaction<Database>, id: string): Promise<boolean> {
  if (!isIdOf('testClock', id)) return false;
  const row = await db.selectFrom('test_clocks').select('id').where('id', '=', id).executeTakeFirst();
  return row !== undefined;
}

/**
 * `ctx` with the clock of customer `customerId`'s test clock, for work that knows only the
 * customer (a provider event: SPEC §11). Costs nothing — no round trip — when TEST_CLOCKS is
 * off or there is no customer; else one read of the customer (and one of its clock if any).
 */
export async function withClockForCustomer<C extends { clock: Clock; config: { testClocks: boolean } }>(
  db: Kysely<Database> | Transaction<Database>,
  ctx: C,
  customerId: string | null,
): Promise<C> {
  if (!ctx.config.testClocks || customerId === null) return ctx;
  const row = await db.selectFrom('customers').select('test_clock_id').where('id', '=', customerId).executeTakeFirst();
  return withClockFor(db, ctx, row?.test_clock_id ?? null);
}
