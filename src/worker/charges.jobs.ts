// The automatic-charge job (SPEC §10): the billing core's chargeDueInvoices on a schedule.
import { sql } from 'kysely';
import { CHARGE_CONCURRENCY, CHARGE_JOB, chargeDueInvoices, dueChargesQuery, OWNER } from '../billing/charges.ts';
import { resumeLapsedCharges } from '../billing/charges.lapsed.ts';
import { withRowRetries } from '../db/row-failures.ts';
import { earliest, REAL_TIME, whereInScope } from '../db/scope.ts';
import { withHeldReports } from '../inbox/inbox.processing.ts';
import type { Job } from './job.ts';

/**
 * The worker job (SPEC §10): charges invoices due for a charge, CHARGE_CONCURRENCY at once
 * (see the header for the exactly-once steps).
 */
export const chargeInvoices: Job = {
  name: CHARGE_JOB,
  batchSize: CHARGE_CONCURRENCY,
  run: (deps, scope = REAL_TIME, log) =>
    chargeDueInvoices(withHeldReports(deps), OWNER, CHARGE_CONCURRENCY, scope, log),
  dueNow: (deps) => dueChargesQuery(deps.db, deps.clock.now().toISOString()),
  // The earliest open invoice of the scope due for a charge after `after` (SPEC §11), or the
  // next retry of one whose claim failed.
  nextDueAt: (deps, scope, after) => {
    const due = async () => {
      const row = await whereInScope(
        deps.db
          .selectFrom('invoices')
          .select((eb) => eb.fn.min('next_payment_attempt_at').as('due'))
          .where('status', '=', sql.lit('open'))
          .where('next_payment_attempt_at', '>', after.toISOString()),
        'invoices.test_clock_id',
        scope,
      ).executeTakeFirst();
      return earliest([row?.due]);
    };
    return withRowRetries(deps.db, CHARGE_JOB, scope, after, due());
  },
  // A dead worker's charges of a test clock, before its advance ends (SPEC §11).
  resumeLapsed: resumeLapsedCharges,
};
