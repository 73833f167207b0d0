// The dunning lists (SPEC §3, seed: "dunning lists (lists relating to failed-payment
// follow-up)", `{data, total}` shape): cases, one case with its steps, past-due
// subscriptions, and cases whose next action is coming up.
import { type Kysely, sql } from 'kysely';
import type { Config } from '../../config.ts';
import { isPostgres } from '../../db/column-types.ts';
import type { Param } from '../../db/compiled-queries.ts';
import type { Database } from '../../db/database.ts';
import { NotFoundError } from '../../http/errors.ts';
import { defineList, type ListParams, type SimpleList, simpleListOf } from '../../http/lists.ts';
import type { Clock } from '../../shared/clock.ts';
import { isIdOf } from '../../shared/ids.ts';
import { toDunningCase } from './dunning.cases.ts';
import type {
  DunningCase,
  DunningCaseWithSteps,
  DunningStep,
  PastDueSubscription,
  UpcomingCase,
} from './dunning.schemas.ts';
import { isFinalActionNext } from './dunning.schedule.ts';
import type { DunningCaseRow, DunningCaseStatus } from '../../db/tables/dunning.table.ts';

const DAY_MS = 86_400_000;

export type { DunningCaseWithSteps, DunningStep, PastDueSubscription, UpcomingCase };

/** The fields `sort_by` may name on the cases lists (GET /api/dunning/cases, …/upcoming). */
export const CASE_SORT_FIELDS = ['created_at', 'next_action_at'] as const;

/** `status` filter of the cases list: one status, or `all`. */
export type CaseStatusFilter = DunningCaseStatus | 'all';

/** A page of cases in `status` (default `open`), sorted per `params`. */
export async function listCases(
  db: Kysely<Database>,
  params: ListParams,
  status: CaseStatusFilter = 'open',
): Promise<SimpleList<DunningCase>> {
  return simpleListOf(await casesList.page(db, params, { status: status === 'all' ? undefined : status }));
}

const casesList = defineList({
  from: (db) => db.selectFrom('dunning_cases'),
  select: (query) => query.selectAll(),
  sortable: CASE_SORT_FIELDS,
  map: (rows) => rows.map(toDunningCase),
});

/** One case with the steps taken on it, oldest first. Throws 404 `not_found`. */
export async function getCase(db: Kysely<Database>, id: string): Promise<DunningCaseWithSteps> {
  const row = isIdOf('dunningCase', id)
    ? await db.selectFrom('dunning_cases').selectAll().where('id', '=', id).executeTakeFirst()
    : undefined;
  if (!row) throw new NotFoundError('dunning case', id);
  const steps = await db.selectFrom('dunning_steps').selectAll().where('case_id', '=', id).orderBy('step').execute();
  return {
    ...toDunningCase(row),
    // Rows as they are but `final` (1/0 on SQLite); the response schema keeps stepSchema's fields.
    steps: steps.map((s): DunningStep => ({ ...s, final: Boolean(s.final) })),
  };
}

export const PAST_DUE_SORT_FIELDS = ['created_at', 'current_period_end'] as const;

const pastDueList = defineList({
  from: (db) => db.selectFrom('subscriptions').where('subscriptions.status', 'in', ['past_due', 'unpaid']),
  select: (behind) =>
    behind
      .innerJoin('customers', 'customers.id', 'subscriptions.customer_id')
      .innerJoin('plans', 'plans.id', 'subscriptions.plan_id')
      .leftJoin('test_clocks', 'test_clocks.id', 'subscriptions.test_clock_id')
      .select([
        'subscriptions.id',
        'subscriptions.customer_id',
        'subscriptions.plan_id',
        'subscriptions.status',
        'subscriptions.current_period_end',
        'subscriptions.updated_at',
        'customers.email',
        'plans.amount',
        'plans.currency',
        'test_clocks.reached_time as clock_time',
      ]),
  sortable: PAST_DUE_SORT_FIELDS,
  table: 'subscriptions',
  map: (rows) => rows,
});

/**
 * A page of subscriptions in `past_due` or `unpaid`, each with its customer's email and
 * what it owes: the open case's `amount_due` (or, once exhausted, the latest case's; with no
 * case at all, the plan's price). Sorted by the subscription's `params.sortBy`.
 * `days_overdue` counts whole days to now: `clock`'s, or for a test clock's customer its
 * clock's time reached (SPEC §11; the same join, no extra read).
 */
export async function listPastDue(
  db: Kysely<Database>,
  clock: Clock,
  params: ListParams,
): Promise<SimpleList<PastDueSubscription>> {
  const page = await pastDueList.page(db, params);
  const rows = page.data;
  const latestCase = new Map<string, DunningCaseRow>();
  if (rows.length > 0) {
    const cases = await db
      .selectFrom('dunning_cases')
      .selectAll()
      .where(
        'subscription_id',
        'in',
        rows.map((r) => r.id),
      )
      .where('status', 'in', ['open', 'exhausted'])
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .execute();
    for (const c of cases) if (!latestCase.has(c.subscription_id)) latestCase.set(c.subscription_id, c);
  }
  const realNow = clock.now().getTime();
  const data = rows.map((row): PastDueSubscription => {
    // A test clock's customer is overdue by its clock's time, not the real one.
    const now = row.clock_time === null ? realNow : Date.parse(row.clock_time);
    const dunningCase = latestCase.get(row.id);
    const overdueSince = dunningCase?.opened_at ?? row.current_period_end ?? row.updated_at;
    return {
      subscription_id: row.id,
      customer_id: row.customer_id,
      customer_email: row.email,
      plan_id: row.plan_id,
      status: row.status as PastDueSubscription['status'],
      dunning_case_id: dunningCase?.status === 'open' ? dunningCase.id : null,
      amount_due: dunningCase?.amount_due ?? row.amount,
      currency: dunningCase?.currency ?? row.currency,
      overdue_since: overdueSince,
      days_overdue: Math.max(0, Math.floor((now - new Date(overdueSince).getTime()) / DAY_MS)),
    };
  });
  return { data, total: page.meta.total };
}

/**
 * A page of open cases whose next action is due within `withinMs` of now (already overdue
 * ones included), sorted per `params`. "Now" is `clock`'s, or with TEST_CLOCKS on, for a
 * test clock's case its clock's time reached (SPEC §11): one more read, of the clocks that
 * have open cases, whose horizons join the filter as bound values.
 */
export async function listUpcoming(
  db: Kysely<Database>,
  clock: Clock,
  config: Pick<Config, 'dunningScheduleMs' | 'testClocks'>,
  params: ListParams,
  withinMs: number,
): Promise<SimpleList<UpcomingCase>> {
  const horizonOf = (now: number) => new Date(now + withinMs).toISOString();
  const horizon = horizonOf(clock.now().getTime());
  const clocks = config.testClocks
    ? await db
        .selectFrom('test_clocks')
        .select(['id', 'reached_time'])
        .where('id', 'in', (eb) =>
          eb
            .selectFrom('dunning_cases')
            .select('test_clock_id')
            .where('status', '=', 'open')
            .where('test_clock_id', 'is not', null),
        )
        .orderBy('id')
        .execute()
    : [];
  const horizons = clocks.map((testClock) => ({
    id: testClock.id,
    horizon: horizonOf(Date.parse(testClock.reached_time)),
  }));
  const page = await upcomingList.page(db, params, {}, { horizon, clocks: JSON.stringify(horizons) });
  const data = page.data.map((row): UpcomingCase => {
    const final = isFinalActionNext(row.step, config.dunningScheduleMs);
    return { ...row, next_action: final ? 'final_action' : 'reminder', next_step: final ? null : row.step + 1 };
  });
  return simpleListOf({ ...page, data });
}

/**
 * The open cases due by a horizon: a case of a test clock named in `clocks` (JSON
 * `[{id, horizon}]`) by its clock's horizon, any other case by `horizon`. The clocks travel
 * as one JSON value, so the statement's shape does not depend on how many there are.
 */
const upcomingList = defineList({
  from: (db, param: Param<{ horizon: string; clocks: string }>) => {
    const clocks = param('clocks');
    const named = isPostgres(db)
      ? sql`from json_to_recordset(cast(${clocks} as json)) as c(id text, horizon timestamptz)
          where c.id = dunning_cases.test_clock_id`
      : sql`from json_each(${clocks}) as c where json_extract(c.value, '$.id') = dunning_cases.test_clock_id`;
    const clockHorizon = isPostgres(db) ? sql`c.horizon` : sql`json_extract(c.value, '$.horizon')`;
    return db
      .selectFrom('dunning_cases')
      .where('status', '=', 'open')
      .where(
        sql<boolean>`((not exists (select 1 ${named}) and dunning_cases.next_action_at <= ${param('horizon')})
          or exists (select 1 ${named} and dunning_cases.next_action_at <= ${clockHorizon}))`,
      );
  },
  select: (query) => query.selectAll(),
  sortable: CASE_SORT_FIELDS,
  map: (rows) => rows.map(toDunningCase),
});
