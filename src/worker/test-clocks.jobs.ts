// The advance of a test clock (SPEC §11), run by the worker. One worker takes an advancing
// clock with a lease (claimed with SKIP LOCKED, then held by its token until it lapses), and
// walks the clock's time forward in due-time order: at each instant it runs every
// clock-aware job (Job.nextDueAt) for that clock's rows only, with the clock's time as
// "now", until none has work left; then it moves to the earliest instant any job names
// next, up to the target. The time reached is saved after every step, so a worker that
// dies mid-advance leaves the next one to resume from there (the jobs are idempotent: a
// rerun at the same instant finds nothing new). The lease is renewed while a step runs too,
// and a worker that finds it lost stops. Once nothing more is due up to the target, work a
// dead caller left in doubt under a lease lapsed in real time (a charge's or a refund's
// provider call) is resolved at the last step, and work under a live lease is waited for
// (the advance's lease set to end with it, Job.resumeLapsed). Then, at the target: `ready`, `test_clock.ready`.
import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Database } from '../db/database.ts';
import { claimRows } from '../db/locking.ts';
import type { Deps } from '../deps.ts';
import { emitEvent } from '../modules/events/events.service.ts';
import type { Job, WorkerLogger } from './job.ts';
import { earliest, type JobScope } from '../db/scope.ts';
import { testClockTime } from '../modules/test-clocks/test-clocks.time.ts';
import { toTestClock } from '../modules/test-clocks/test-clocks.service.ts';
import type { TestClockRow } from '../db/tables/test-clocks.table.ts';

/**
 * How long (real time) a worker's lease on an advance lasts unless renewed: it is renewed at
 * every saved step and, while a step runs, between its batches (leaseKeeper).
 */
export const ADVANCE_LEASE_MS = 60_000;

/** Most passes over the jobs at one instant: a guard against a job that never runs dry. */
const MAX_PASSES_PER_INSTANT = 1_000;

interface Lease {
  id: string;
  token: string;
}

/** Advancing clocks whose lease is free or lapsed at `now` (real time), longest waiting first. */
function advancesToTakeQuery(db: Kysely<Database>, now: Date) {
  return db
    .selectFrom('test_clocks')
    .selectAll()
    .where('status', '=', 'advancing')
    .where((eb) => eb.or([eb('lease_expires_at', 'is', null), eb('lease_expires_at', '<=', now.toISOString())]))
    .orderBy('updated_at')
    .orderBy('id');
}

/**
 * Claims one advancing clock whose lease is free or lapsed (real time), taking a new lease.
 * Returns the clock row, or undefined when there is none to take.
 */
async function takeAdvance(deps: Deps): Promise<{ row: TestClockRow; lease: Lease } | undefined> {
  return deps.db.transaction().execute(async (trx) => {
    const now = deps.clock.now();
    const row = await claimRows(advancesToTakeQuery(trx, now).limit(1), trx).executeTakeFirst();
    if (!row) return undefined;
    const lease = { id: row.id, token: randomUUID() };
    await trx
      .updateTable('test_clocks')
      .set({ lease_token: lease.token, lease_expires_at: leaseEnd(now) })
      .where('id', '=', row.id)
      .execute();
    return { row, lease };
  });
}

function leaseEnd(now: Date): string {
  return new Date(now.getTime() + ADVANCE_LEASE_MS).toISOString();
}

/** Saves the time reached and renews the lease; false when the lease was lost (or the clock deleted). */
async function saveStep(db: Kysely<Database>, realNow: Date, lease: Lease, reached: Date): Promise<boolean> {
  const result = await db
    .updateTable('test_clocks')
    .set({ reached_time: reached.toISOString(), lease_expires_at: leaseEnd(realNow) })
    .where('id', '=', lease.id)
    .where('lease_token', '=', lease.token)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/** Real time after which a running step renews its lease: a third of it, so two renewals may fail to come and it still holds. */
const LEASE_RENEW_AFTER_MS = ADVANCE_LEASE_MS / 3;

/**
 * Renews the lease while a step runs (a step of 100,000 renewals outlasts ADVANCE_LEASE_MS):
 * `renew()` extends it when LEASE_RENEW_AFTER_MS of real time passed since the last renewal,
 * and returns false when the lease was lost (another worker took the advance over, or the
 * clock was deleted): the step stops then, so two workers never run one advance at once.
 */
function leaseKeeper(db: Kysely<Database>, realClock: Deps['clock'], lease: Lease) {
  let renewedAt = realClock.now().getTime();
  return async (): Promise<boolean> => {
    const now = realClock.now();
    if (now.getTime() - renewedAt < LEASE_RENEW_AFTER_MS) return true;
    const result = await db
      .updateTable('test_clocks')
      .set({ lease_expires_at: leaseEnd(now) })
      .where('id', '=', lease.id)
      .where('lease_token', '=', lease.token)
      .executeTakeFirst();
    renewedAt = now.getTime();
    return Number(result.numUpdatedRows) === 1;
  };
}

/**
 * Runs every job for `scope` at the instant of `deps.clock` until a whole pass finds nothing;
 * `keepLease` runs before every batch. Returns false when the lease was lost midway.
 */
async function runUntilQuiet(
  deps: Deps,
  jobs: readonly Job[],
  scope: JobScope,
  keepLease: () => Promise<boolean>,
  log: WorkerLogger | undefined,
): Promise<boolean> {
  for (let pass = 0; pass < MAX_PASSES_PER_INSTANT; pass++) {
    let handled = 0;
    for (const job of jobs) {
      for (;;) {
        if (!(await keepLease())) return false;
        const count = await job.run(deps, scope, log);
        handled += count;
        if (count < job.batchSize) break;
      }
    }
    if (handled === 0) return true;
  }
  throw new Error(`test clock ${scope.testClockId}: due work did not run dry at ${deps.clock.now().toISOString()}`);
}

/** The earliest instant after `after` at which any of `jobs` has work in `scope`, or null. */
async function nextDue(deps: Deps, jobs: readonly Job[], scope: JobScope, after: Date): Promise<Date | null> {
  const times = await Promise.all(jobs.map((job) => job.nextDueAt!(deps, scope, after)));
  let best: Date | null = null;
  for (const time of times) if (time !== null && (best === null || time.getTime() < best.getTime())) best = time;
  return best;
}

/** What the jobs' resumeLapsed found for `scope`, summed: invoices made due, the earliest live lease's end. */
async function resumeLapsed(
  deps: Deps,
  jobs: readonly Job[],
  scope: JobScope,
): Promise<{ resumed: number; heldUntil: Date | null }> {
  let resumed = 0;
  let heldUntil: Date | null = null;
  for (const job of jobs) {
    if (!job.resumeLapsed) continue;
    const found = await job.resumeLapsed(deps, scope);
    resumed += found.resumed;
    if (found.heldUntil !== null && (heldUntil === null || found.heldUntil < heldUntil)) heldUntil = found.heldUntil;
  }
  return { resumed, heldUntil };
}

/**
 * Leaves the advance `advancing` until `until` (real time; another worker's lease on its work
 * ends then): its own lease is set to end then, so a worker (this one, woken by wakeAt, or
 * another) takes it over and resumes from the last step saved. Returns false: not finished.
 */
async function waitForLease(db: Kysely<Database>, lease: Lease, until: Date): Promise<false> {
  await db
    .updateTable('test_clocks')
    .set({ lease_expires_at: until.toISOString() })
    .where('id', '=', lease.id)
    .where('lease_token', '=', lease.token)
    .execute();
  return false;
}

/**
 * Runs the advance of the clock in `row` (held by `lease`) from its `reached_time` to its
 * `frozen_time` (see the header). Returns false when the lease was lost midway (another
 * worker carries on), the clock was deleted, or it waits for another worker's lease.
 */
async function runAdvance(
  deps: Deps,
  jobs: readonly Job[],
  row: TestClockRow,
  lease: Lease,
  log: WorkerLogger | undefined,
): Promise<boolean> {
  const scope: JobScope = { testClockId: row.id };
  const target = new Date(row.frozen_time);
  let reached = new Date(row.reached_time);
  const keepLease = leaseKeeper(deps.db, deps.clock, lease);
  for (;;) {
    const clockDeps = { ...deps, clock: testClockTime(row.id, reached, deps.clock) };
    if (!(await runUntilQuiet(clockDeps, jobs, scope, keepLease, log))) return false;
    const next = await nextDue(deps, jobs, scope, reached);
    if (next !== null && next.getTime() <= target.getTime()) {
      reached = next;
      if (!(await saveStep(deps.db, deps.clock.now(), lease, reached))) return false;
      continue;
    }
    // Nothing more due up to the target. Work a dead worker left under a lapsed lease is
    // resolved at this instant (run again); work under a live lease is waited for.
    const doubt = await resumeLapsed(clockDeps, jobs, scope);
    if (doubt.resumed > 0) continue;
    if (doubt.heldUntil !== null) return waitForLease(deps.db, lease, doubt.heldUntil);
    break;
  }
  return deps.db.transaction().execute(async (trx) => {
    const now = deps.clock.now().toISOString();
    const changes = {
      reached_time: target.toISOString(),
      status: 'ready' as const,
      lease_token: null,
      lease_expires_at: null,
      updated_at: now,
    };
    const result = await trx
      .updateTable('test_clocks')
      .set(changes)
      .where('id', '=', lease.id)
      .where('lease_token', '=', lease.token)
      .executeTakeFirst();
    if (Number(result.numUpdatedRows) !== 1) return false;
    await emitEvent(trx, deps.clock, 'test_clock.ready', toTestClock({ ...row, ...changes }));
    return true;
  });
}

/**
 * The worker's job that advances test clocks (SPEC §11), over the clock-aware jobs among
 * `jobs` (those with `nextDueAt`; the worker's list passes its own). Each run takes one
 * advancing clock and runs its whole advance; returns 1, or 0 when there was none (or
 * TEST_CLOCKS is off). Runs in real time only.
 */
export function advanceTestClocks(jobs: readonly Job[]): Job {
  const clockAware = jobs.filter((job) => job.nextDueAt !== undefined);
  return {
    name: 'advance_test_clocks',
    batchSize: 1,
    run: async (deps, scope, log) => {
      if (!deps.config.testClocks || (scope !== undefined && scope.testClockId !== null)) return 0;
      const taken = await takeAdvance(deps);
      if (!taken) return 0;
      await runAdvance(deps, clockAware, taken.row, taken.lease, log);
      return 1;
    },
    dueNow: (deps) => (deps.config.testClocks ? advancesToTakeQuery(deps.db, deps.clock.now()) : null),
    // Another worker's lease lapsing (an advance asked for writes an event: the doorbell).
    wakeAt: async ({ db }, after) => {
      const row = await db
        .selectFrom('test_clocks')
        .select((eb) => eb.fn.min('lease_expires_at').as('due'))
        .where('status', '=', 'advancing')
        .where('lease_expires_at', '>', after.toISOString())
        .executeTakeFirst();
      return earliest([row?.due]);
    },
  };
}
