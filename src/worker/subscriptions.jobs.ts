// The subscription lifecycle's time-based work (SPEC §4, §7, §9): expire `incomplete`, renew
// periods (their invoices), mark unpaid renewals `past_due`, apply period-end cancellations. Each job claims a small
// batch of due rows (SKIP LOCKED on PostgreSQL) and moves them in that same transaction,
// so no row is handled twice at once and a crash rolls the whole batch back for a retry. A
// row whose work throws is rolled back alone and retried after a backoff (db/row-failures.ts).
import { type Kysely, sql, type Transaction } from 'kysely';
import type { Database } from '../db/database.ts';
import type { Deps } from '../deps.ts';
import { claimRows } from '../db/locking.ts';
import { runIsolatedBatch, whereNotWaitingRetry, withRowRetries } from '../db/row-failures.ts';
import { deferCounts, flushCounts } from '../db/counts.ts';
import { deferEvents, flushEvents } from '../modules/events/events.service.ts';
import { fanOutAsWritten } from '../modules/webhooks/webhooks.fan-out.ts';
import { realClockOf } from '../shared/clock.ts';
import { type Job, type WorkerLogger } from './job.ts';
import { earliest, type JobScope, REAL_TIME, whereInScope } from '../db/scope.ts';
import { openOrCountDunningCase } from '../modules/dunning/dunning.cases.ts';
import { voidUnpaidInvoices } from '../billing/settle.ts';
import { renewSubscription, renewSubscriptions } from '../billing/renewals.ts';
import { issueFinalUsageInvoice } from '../billing/issue.ts';
import { lockCustomerBalances } from '../modules/balances/balances.ledger.ts';
import { transitionSubscription } from '../modules/subscriptions/subscriptions.lifecycle.ts';
import type { SubscriptionRow } from '../db/tables/subscriptions.table.ts';

const BATCH_SIZE = 50;
/**
 * Renewals per transaction: the batch is written set-based (renewSubscriptions), so a bigger
 * batch costs little more than a small one, and on the 1st of the month each batch is a
 * commit (docs/performance.md "The billing run").
 */
const RENEWAL_BATCH_SIZE = 100;

/** The jobs' names: also the keys of their rows' failure records (db/row-failures.ts). */
const EXPIRE = 'expire_incomplete_subscriptions';
const RENEW = 'issue_renewal_invoices';
const PAST_DUE = 'mark_unpaid_renewals_past_due';
const CANCEL = 'apply_period_end_cancellations';

/**
 * `run`'s claim, row work and count for a job over `scope`'s subscriptions: the batch runs
 * with a failing row isolated (runIsolatedBatch); returns how many rows were claimed.
 */
async function runBatch(
  deps: Deps,
  log: WorkerLogger | undefined,
  job: string,
  claim: (trx: Transaction<Database>) => Promise<SubscriptionRow[]>,
  each: (trx: Transaction<Database>, row: SubscriptionRow) => Promise<unknown>,
): Promise<number> {
  const { rows } = await runIsolatedBatch(deps.db, deps.clock, { job, claim, each }, log);
  return rows.length;
}

async function claimDue(
  trx: Transaction<Database>,
  scope: JobScope,
  where: (query: ReturnType<typeof base>) => ReturnType<typeof base>,
): Promise<SubscriptionRow[]> {
  return claimRows(where(base(trx, scope)).limit(BATCH_SIZE), trx).execute();
}

function base(trx: Kysely<Database>, scope: JobScope) {
  return whereInScope(trx.selectFrom('subscriptions').selectAll(), 'subscriptions.test_clock_id', scope);
}

/** The earliest `column` value of `scope`'s subscriptions matching `where`, strictly after `after`. */
async function earliestAfter(
  deps: Deps,
  scope: JobScope,
  column: 'created_at' | 'current_period_end',
  after: string,
  where: (query: ReturnType<typeof minBase>) => ReturnType<typeof minBase>,
): Promise<Date | null> {
  const row = await where(minBase(deps, scope, column))
    .where(column, '>', after)
    .executeTakeFirst();
  return earliest([row?.due]);
}

function minBase(deps: Deps, scope: JobScope, column: 'created_at' | 'current_period_end') {
  return whereInScope(
    deps.db.selectFrom('subscriptions').select((eb) => eb.fn.min(column).as('due')),
    'subscriptions.test_clock_id',
    scope,
  );
}

/**
 * The statuses that renew, as a literal: a partial index (`subscriptions_renewal_due`, and
 * `…_by_clock` for a clock's rows; migration 0028) is used only when the query names its
 * predicate's very terms.
 */
const RENEWING = sql<boolean>`subscriptions.status in ('active', 'trialing')`;

/**
 * `scope`'s `active`/`trialing` subscriptions whose `current_period_end` ≤ `now` (ISO 8601)
 * and whose `cancel_at_period_end` is `cancelling`, earliest first: the renewal and
 * period-end claims. Reads the scope's own partial index in due order, so it touches only
 * due rows of that scope (real time reads no clock row). A row that failed waits for its
 * retry (db/row-failures.ts).
 */
export function periodEndDueQuery(trx: Kysely<Database>, scope: JobScope, now: string, cancelling: boolean) {
  return whereNotWaitingRetry(
    base(trx, scope)
      .where(RENEWING)
      .where('cancel_at_period_end', '=', cancelling)
      .where('current_period_end', '<=', now)
      .orderBy('current_period_end')
      .orderBy('id'),
    cancelling ? CANCEL : RENEW,
    'subscriptions.id',
    now,
  );
}

/** The earliest `current_period_end` after `after` of `scope`'s renewing subscriptions with that flag. */
async function nextPeriodEnd(deps: Deps, scope: JobScope, after: Date, cancelling: boolean): Promise<Date | null> {
  // First row in index order (not min(): the flag is not in the index, so min would read them all).
  const row = await whereInScope(
    deps.db.selectFrom('subscriptions').select('current_period_end'),
    'subscriptions.test_clock_id',
    scope,
  )
    .where(RENEWING)
    .where('cancel_at_period_end', '=', cancelling)
    .where('current_period_end', '>', after.toISOString())
    .orderBy('current_period_end')
    .orderBy('id')
    .limit(1)
    .executeTakeFirst();
  return earliest([row?.current_period_end]);
}

/**
 * `scope`'s `active`/`trialing` subscriptions (not flagged to cancel) with an open invoice
 * due at or before `cutoff` (ISO 8601): the past-due claim. Driven by the open invoices of
 * the scope by `due_at` (partial indexes `invoices_open_by_due_at` / `…_by_clock_due_at`),
 * so it reads only overdue invoices and their subscriptions, never every active one. A row
 * that failed waits for its retry at `now` (ISO 8601, db/row-failures.ts).
 */
export function pastDueQuery(trx: Kysely<Database>, scope: JobScope, cutoff: string, now: string) {
  const overdue = whereInScope(
    trx
      .selectFrom('invoices')
      .select('invoices.subscription_id')
      .where('invoices.status', '=', sql.lit('open'))
      .where('invoices.due_at', '<=', cutoff),
    'invoices.test_clock_id',
    scope,
  );
  // No scope filter here: an invoice's test clock is its subscription's (the customer's). The
  // status is tested as an expression no index serves (`|| ''`), so the planner looks the
  // overdue few up by id instead of walking a status index that holds every scope's rows.
  return whereNotWaitingRetry(
    trx
      .selectFrom('subscriptions')
      .selectAll()
      .where(sql<boolean>`subscriptions.status || '' in ('active', 'trialing')`)
      .where('cancel_at_period_end', '=', false)
      .where('subscriptions.id', 'in', overdue)
      .orderBy('subscriptions.id'),
    PAST_DUE,
    'subscriptions.id',
    now,
  );
}

/** ISO 8601: `incomplete` subscriptions created at or before it have expired (SUBSCRIPTION_INCOMPLETE_TTL). */
function incompleteCutoff({ config }: Deps, now: Date): string {
  return new Date(now.getTime() - config.subscriptionIncompleteTtlMs).toISOString();
}

/**
 * `query` narrowed to `incomplete` subscriptions created at or before `cutoff`, oldest first:
 * the expiry claim. Reads the scope's prefix of `subscriptions_incomplete_due` (migration 0038;
 * the status a literal, so SQLite uses the partial index).
 */
function incompleteDue(query: ReturnType<typeof base>, cutoff: string, now: string) {
  return whereNotWaitingRetry(
    query
      .where('status', '=', sql.lit('incomplete'))
      .where('created_at', '<=', cutoff)
      .orderBy('created_at')
      .orderBy('id'),
    EXPIRE,
    'subscriptions.id',
    now,
  );
}

/** `scope`'s expired `incomplete` subscriptions (created at or before `cutoff`): the expiry claim (incompleteDue). */
export function incompleteDueQuery(trx: Kysely<Database>, scope: JobScope, cutoff: string, now: string) {
  return incompleteDue(base(trx, scope), cutoff, now);
}

/** The renewal-grace cutoff (ISO 8601): an open invoice due at or before it is overdue (SPEC §9). */
function pastDueCutoff({ clock, config }: Deps): string {
  return new Date(clock.now().getTime() - config.renewalGraceMs).toISOString();
}

/**
 * `incomplete` with no payment for SUBSCRIPTION_INCOMPLETE_TTL → `incomplete_expired`; its
 * first invoice, if nothing was paid on it, becomes `void` first (`invoice.voided`, SPEC §9).
 */
export const expireIncompleteSubscriptions: Job = {
  name: EXPIRE,
  batchSize: BATCH_SIZE,
  run: (deps, scope = REAL_TIME, log) => {
    const { clock } = deps;
    const now = clock.now();
    const cutoff = incompleteCutoff(deps, now);
    return runBatch(
      deps,
      log,
      EXPIRE,
      (trx) => claimDue(trx, scope, (q) => incompleteDue(q, cutoff, now.toISOString())),
      async (trx, row) => {
        await voidUnpaidInvoices(trx, deps, row.id);
        await transitionSubscription(trx, clock, row, 'incomplete_expired', {
          ended_at: now.toISOString(),
          cancellation_reason: 'incomplete_expired',
        });
      },
    );
  },
  dueNow: (deps) => {
    const now = deps.clock.now();
    return incompleteDue(base(deps.db, REAL_TIME), incompleteCutoff(deps, now), now.toISOString());
  },
  nextDueAt: (deps, scope, after) => {
    const ttl = deps.config.subscriptionIncompleteTtlMs;
    const expiry = async () => {
      const from = new Date(after.getTime() - ttl).toISOString();
      const created = await earliestAfter(deps, scope, 'created_at', from, (q) =>
        q.where('status', '=', sql.lit('incomplete')),
      );
      return created && new Date(created.getTime() + ttl);
    };
    return withRowRetries(deps.db, EXPIRE, scope, after, expiry());
  },
};

/**
 * `active`/`trialing` subscriptions reaching `current_period_end` (or trial end), not
 * flagged to cancel at period end, renew into their next period on the billing cycle anchor
 * (billing/renewals.ts, SPEC §4, §9): its invoice issued (`invoice.created`, due at the
 * period's start) unless a payment in advance issued it already, and the subscription's
 * period moved to it. Exactly once per (subscription, period): the claim locks the
 * subscription (SKIP LOCKED: two workers take different rows) and the period moves in the
 * same transaction, so a renewed row is not due again; the invoices' unique (subscription_id,
 * period_start) index is the backstop. A crash rolls the batch back; the next run renews it.
 */
export const issueRenewalInvoices: Job = {
  name: RENEW,
  batchSize: RENEWAL_BATCH_SIZE,
  run: async (deps, scope = REAL_TIME, log) => {
    const now = deps.clock.now().toISOString();
    const batch = {
      job: RENEW,
      claim: (trx: Transaction<Database>) =>
        claimRows(periodEndDueQuery(trx, scope, now, false).limit(RENEWAL_BATCH_SIZE), trx).execute(),
      begin: async (trx: Transaction<Database>, rows: readonly SubscriptionRow[]) => {
        // Every balance the batch may spend, in one order, before any invoice takes a number.
        await lockCustomerBalances(
          trx,
          rows.map((row) => row.customer_id),
        );
        // The batch's events and count changes are written once, before the commit.
        deferEvents(trx);
        deferCounts(trx);
      },
      each: (trx: Transaction<Database>, row: SubscriptionRow) => renewSubscription(trx, deps, row),
      // The batch in a handful of statements; a throw reruns it row by row through `each`.
      all: (trx: Transaction<Database>, rows: readonly SubscriptionRow[]) => renewSubscriptions(trx, deps, rows),
      end: async (trx: Transaction<Database>) => {
        // Written fanned out: the webhook worker need not claim and rewrite them.
        await flushEvents(trx, fanOutAsWritten(realClockOf(deps.clock)));
        await flushCounts(trx);
      },
    };
    const { rows } = await runIsolatedBatch(deps.db, deps.clock, batch, log);
    return rows.length;
  },
  dueNow: (deps) => periodEndDueQuery(deps.db, REAL_TIME, deps.clock.now().toISOString(), false),
  nextDueAt: (deps, scope, after) =>
    withRowRetries(deps.db, RENEW, scope, after, nextPeriodEnd(deps, scope, after, false)),
};

/**
 * `active`/`trialing` subscriptions whose renewal invoice is still `open` RENEWAL_GRACE after
 * its `due_at` → `past_due` (SPEC §9), with a dunning case for that invoice (reason
 * `renewal_unpaid`, owing its `amount_remaining`; SPEC §4). A partly paid invoice is still
 * open. Subscriptions flagged to cancel at period end are left to that job.
 */
export const markUnpaidRenewalsPastDue: Job = {
  name: PAST_DUE,
  batchSize: BATCH_SIZE,
  run: (deps, scope = REAL_TIME, log) => {
    const { clock } = deps;
    const cutoff = pastDueCutoff(deps);
    const now = clock.now().toISOString();
    return runBatch(
      deps,
      log,
      PAST_DUE,
      (trx) => claimRows(pastDueQuery(trx, scope, cutoff, now).limit(BATCH_SIZE), trx).execute(),
      async (trx, row) => {
        const invoice = await trx
          .selectFrom('invoices')
          .select(['id', 'amount_due', 'amount_paid', 'currency'])
          .where('subscription_id', '=', row.id)
          .where('status', '=', 'open')
          .where('due_at', '<=', cutoff)
          .orderBy('due_at')
          .orderBy('id')
          .executeTakeFirstOrThrow();
        await transitionSubscription(trx, clock, row, 'renewal_unpaid');
        await openOrCountDunningCase(trx, deps, row, {
          reason: 'renewal_unpaid',
          paymentId: null,
          amountDue: Number(invoice.amount_due) - Number(invoice.amount_paid),
          currency: invoice.currency,
          invoiceId: invoice.id,
        });
      },
    );
  },
  dueNow: (deps) => pastDueQuery(deps.db, REAL_TIME, pastDueCutoff(deps), deps.clock.now().toISOString()),
  nextDueAt: (deps, scope, after) => withRowRetries(deps.db, PAST_DUE, scope, after, nextPastDue(deps, scope, after)),
};

/** The earliest instant after `after` at which an open renewal invoice of `scope` passes its grace. */
async function nextPastDue(deps: Deps, scope: JobScope, after: Date): Promise<Date | null> {
  const grace = deps.config.renewalGraceMs;
  const row = await whereInScope(
    deps.db
      .selectFrom('invoices')
      .innerJoin('subscriptions', 'subscriptions.id', 'invoices.subscription_id')
      .select((eb) => eb.fn.min('invoices.due_at').as('due')),
    'invoices.test_clock_id',
    scope,
  )
    .where('invoices.status', '=', 'open')
    .where('invoices.due_at', '>', new Date(after.getTime() - grace).toISOString())
    .where('subscriptions.status', 'in', ['active', 'trialing'])
    .where('subscriptions.cancel_at_period_end', '=', false)
    .executeTakeFirst();
  const due = earliest([row?.due]);
  return due && new Date(due.getTime() + grace);
}

/** Flagged `active`/`trialing` subscriptions reaching `current_period_end` → `cancelled`. */
export const applyPeriodEndCancellations: Job = {
  name: CANCEL,
  batchSize: BATCH_SIZE,
  run: (deps, scope = REAL_TIME, log) => {
    const { clock } = deps;
    const now = clock.now().toISOString();
    return runBatch(
      deps,
      log,
      CANCEL,
      (trx) => claimRows(periodEndDueQuery(trx, scope, now, true).limit(BATCH_SIZE), trx).execute(),
      async (trx, row) => {
        const ended = await transitionSubscription(trx, clock, row, 'period_end_cancel', {
          cancel_at_period_end: false,
          ended_at: row.current_period_end,
        });
        // The last period's usage is billed in arrears on a final invoice (SPEC §15 "Cancelling").
        if (row.current_period_end !== null) {
          await issueFinalUsageInvoice(trx, deps, row, new Date(row.current_period_end).toISOString());
        }
        return ended;
      },
    );
  },
  dueNow: (deps) => periodEndDueQuery(deps.db, REAL_TIME, deps.clock.now().toISOString(), true),
  nextDueAt: (deps, scope, after) =>
    withRowRetries(deps.db, CANCEL, scope, after, nextPeriodEnd(deps, scope, after, true)),
};
