// Whose due rows a claim reads (SPEC §11): real time (rows with no test clock) or one test
// clock's rows. Record modules filter their claims with whereInScope; the worker passes the
// scope of the run.
import { type SelectQueryBuilder, sql } from 'kysely';

/**
 * Whose due work one run handles (SPEC §11): real time (`testClockId` null: only rows with no
 * test clock) or one test clock's rows, run by its advance with `deps.clock` at the clock's
 * step. A clock-aware job filters every row it claims with whereInScope.
 */
export interface JobScope {
  testClockId: string | null;
}

/** The real-time worker's scope: rows of customers without a test clock. */
export const REAL_TIME: JobScope = Object.freeze({ testClockId: null });

/**
 * `query` filtered to `scope`'s rows by their `column` (e.g. `'subscriptions.test_clock_id'`):
 * `IS NULL` for real time (cheap: the existing due-work indexes stay in use and clock rows
 * are few), `= id` for a test clock (the partial `<table>_by_test_clock` index).
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- works for any select
export function whereInScope<QB extends SelectQueryBuilder<any, any, any>>(
  query: QB,
  column: string,
  scope: JobScope = REAL_TIME,
): QB {
  const ref = sql.ref(column);
  return (scope.testClockId === null ? query.where(ref, 'is', null) : query.where(ref, '=', scope.testClockId)) as QB;
}

/** The earliest of `times` (ISO 8601 or null), as a Date; null when all are null. */
export function earliest(times: readonly (string | null | undefined)[]): Date | null {
  let best: number | null = null;
  for (const time of times) {
    if (time === null || time === undefined) continue;
    const ms = new Date(time).getTime();
    if (best === null || ms < best) best = ms;
  }
  return best === null ? null : new Date(best);
}
