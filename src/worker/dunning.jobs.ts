// The dunning schedule's work (SPEC §4, §7): each due step of an open case emits
// `dunning.reminder` — first re-charging the saved default method when there is one and
// waiting for that charge (billing/dunning-steps.ts, SPEC §10 "Dunning retries") — and after the
// last one the final action exhausts the case and cancels the subscription or marks it
// `unpaid` (DUNNING_FINAL_ACTION). The final action charges nothing.
//
// Exactly once: a batch of due cases is claimed (SKIP LOCKED on PostgreSQL; SQLite's
// BEGIN IMMEDIATE serializes writers) and each case's step, its event and the case's new
// `next_action_at` commit in that one transaction. A crash mid-step rolls all of it back,
// and the step is taken again by whichever worker claims the case next. The
// `dunning_steps` primary key (case, step) refuses a second copy of any step. A case whose
// step throws is rolled back alone and retried after a backoff (db/row-failures.ts).
import { type Kysely, sql, type Transaction } from 'kysely';
import type { Database } from '../db/database.ts';
import { claimRows } from '../db/locking.ts';
import { runIsolatedBatch, whereNotWaitingRetry, withRowRetries } from '../db/row-failures.ts';
import { type Job } from './job.ts';
import { earliest, type JobScope, REAL_TIME, whereInScope } from '../db/scope.ts';
import { emitEvent } from '../modules/events/events.service.ts';
import type { InvoiceContext } from '../modules/invoices/invoices.lifecycle.ts';
import { markInvoiceUncollectibleIfOpen } from '../billing/settle.ts';
import { nextStatus } from '../modules/subscriptions/subscriptions.status.ts';
import { lockSubscription, transitionSubscription } from '../modules/subscriptions/subscriptions.lifecycle.ts';
import { closeCase, type DunningContext } from '../modules/dunning/dunning.cases.ts';
import { isFinalActionNext } from '../modules/dunning/dunning.schedule.ts';
import { takeStep } from '../billing/dunning-steps.ts';
import type { DunningCaseRow } from '../db/tables/dunning.table.ts';

const BATCH_SIZE = 50;

const JOB = 'run_dunning_schedule';

/**
 * The final action (SPEC §4, §9): the case becomes `exhausted` (`dunning.exhausted`) and a
 * `past_due` subscription becomes `cancelled` with reason `dunning_exhausted`, or `unpaid`,
 * per DUNNING_FINAL_ACTION, with its own event. With `cancel`, the invoice the case chases
 * becomes `uncollectible` (`invoice.marked_uncollectible`) when still open: a later payment
 * can still settle it. A subscription in any other state is left as it is (the transition
 * table decides), and so is its invoice.
 */
async function applyFinalAction(trx: Transaction<Database>, ctx: DunningContext & InvoiceContext, row: DunningCaseRow) {
  const { clock, config } = ctx;
  const exhausted = await closeCase(trx, clock, row, 'exhausted');
  await emitEvent(trx, clock, 'dunning.exhausted', exhausted);
  const subscription = await lockSubscription(trx, row.subscription_id);
  const now = clock.now().toISOString();
  if (config.dunningFinalAction === 'cancel') {
    if (!nextStatus(subscription.status, 'dunning_exhausted_cancel')) return;
    await transitionSubscription(trx, clock, subscription, 'dunning_exhausted_cancel', {
      cancel_at_period_end: false,
      cancelled_at: now,
      ended_at: now,
      cancellation_reason: 'dunning_exhausted',
    });
    // Lock order: the subscription (above), then its invoice.
    if (row.invoice_id !== null) await markInvoiceUncollectibleIfOpen(trx, ctx, row.invoice_id);
  } else if (nextStatus(subscription.status, 'dunning_exhausted_unpaid')) {
    await transitionSubscription(trx, clock, subscription, 'dunning_exhausted_unpaid');
  }
}

/**
 * `scope`'s open cases whose next action is due at `now` (ISO 8601), earliest first: the claim.
 * Reads the scope's prefix of `dunning_cases_due` (migration 0038; the status a literal, so
 * SQLite uses the partial index).
 */
export function casesDueQuery(db: Kysely<Database>, scope: JobScope, now: string) {
  return whereNotWaitingRetry(
    whereInScope(db.selectFrom('dunning_cases').selectAll(), 'dunning_cases.test_clock_id', scope)
      .where('status', '=', sql.lit('open'))
      .where('next_action_at', '<=', now)
      .orderBy('next_action_at')
      .orderBy('id'),
    JOB,
    'dunning_cases.id',
    now,
  );
}

/** Open cases whose next step or final action is due: one action per case per claim. */
export const runDunningSchedule: Job = {
  name: JOB,
  batchSize: BATCH_SIZE,
  run: async (deps, scope = REAL_TIME, log) => {
    const now = deps.clock.now().toISOString();
    const batch = {
      job: JOB,
      claim: (trx: Transaction<Database>) => claimRows(casesDueQuery(trx, scope, now).limit(BATCH_SIZE), trx).execute(),
      each: async (trx: Transaction<Database>, row: DunningCaseRow) => {
        if (isFinalActionNext(row.step, deps.config.dunningScheduleMs)) await applyFinalAction(trx, deps, row);
        else await takeStep(trx, deps, row);
      },
    };
    const { rows } = await runIsolatedBatch(deps.db, deps.clock, batch, log);
    return rows.length;
  },
  dueNow: (deps) => casesDueQuery(deps.db, REAL_TIME, deps.clock.now().toISOString()),
  nextDueAt: ({ db }, scope, after) => withRowRetries(db, JOB, scope, after, nextAction(db, scope, after)),
};

/** The earliest `next_action_at` of `scope`'s open cases after `after`. */
async function nextAction(db: Kysely<Database>, scope: JobScope, after: Date): Promise<Date | null> {
  const row = await whereInScope(
    db.selectFrom('dunning_cases').select((eb) => eb.fn.min('next_action_at').as('due')),
    'dunning_cases.test_clock_id',
    scope,
  )
    .where('status', '=', sql.lit('open'))
    .where('next_action_at', '>', after.toISOString())
    .executeTakeFirst();
  return earliest([row?.due]);
}
