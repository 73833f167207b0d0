// Dunning gauges for /metrics (SPEC §8): cases by status, and open cases whose
// next step or final action is already due (the worker's dunning backlog; near 0 when healthy).
import { sql } from 'kysely';
import type { DatabaseGauge } from '../../observability/metrics.ts';
import { DUNNING_CASE_STATUSES } from '../../db/tables/dunning.table.ts';

/** `billing_dunning_cases{status}`: every status, 0 included, so dashboards see each series. */
export const dunningCasesByStatus: DatabaseGauge = {
  name: 'billing_dunning_cases',
  help: 'Dunning cases by status.',
  labelNames: ['status'],
  collect: async ({ db }) => {
    const rows = await db
      .selectFrom('dunning_cases')
      .select(['status', sql<number>`count(*)`.as('n')])
      .groupBy('status')
      .execute();
    const counts = new Map(rows.map((row) => [row.status, Number(row.n)]));
    return DUNNING_CASE_STATUSES.map((status) => ({ labels: { status }, value: counts.get(status) ?? 0 }));
  },
};

/** `billing_dunning_actions_due`: open cases whose next action time has passed. */
export const dunningActionsDue: DatabaseGauge = {
  name: 'billing_dunning_actions_due',
  help: 'Open dunning cases whose next reminder or final action is due now (the worker backlog).',
  collect: async ({ db, clock }) => {
    const row = await db
      .selectFrom('dunning_cases')
      .select(sql<number>`count(*)`.as('n'))
      .where('status', '=', 'open')
      .where('next_action_at', '<=', clock.now().toISOString())
      .executeTakeFirst();
    return [{ value: Number(row?.n ?? 0) }];
  },
};
