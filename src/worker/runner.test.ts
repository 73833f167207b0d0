// The runner's due probe (Job.dueNow, runner.ts): a tick asks every probe in one statement and
// runs only from the first job with work on; a job without a probe runs every tick; a failing
// probe runs every job. Checked on the database the suite runs on.
import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import { sql } from 'kysely';
import { buildTestApp } from '../../test/helpers/app.ts';
import type { Deps } from '../deps.ts';
import { notifyOutboxActivity } from '../modules/events/events.outbox-signal.ts';
import { type DueProbe, IDLE_SLEEP_POLLS, type Job } from './job.ts';
import { Worker } from './runner.ts';

/** A job that counts its runs and reports `handled` items; its probe finds a row iff `due()`. */
function countingJob(name: string, due: (() => boolean) | undefined, handled = 0) {
  const job = {
    name,
    batchSize: 10,
    runs: 0,
    run: () => {
      job.runs += 1;
      return Promise.resolve(handled);
    },
    ...(due && {
      // A probe whose one row exists iff `due()` says so when the tick asks.
      dueNow: (deps: Deps): DueProbe =>
        deps.db.selectNoFrom(sql<number>`1`.as('x')).where(sql<boolean>`${due() ? 1 : 0} = 1`) as unknown as DueProbe,
    }),
  } satisfies Job & { runs: number };
  return job;
}

const log = { error: () => {} };

test('nothing due: only the jobs without a probe run, in one statement for the probes', async (t) => {
  const app = await buildTestApp(t);
  const idle = [countingJob('a', () => false), countingJob('b', () => false)];
  const always = countingJob('housekeeping', undefined);
  const worker = new Worker(app.deps, [...idle, always], log);
  const handled = await worker.runOnce();
  assert.deepEqual(
    idle.map((job) => job.runs),
    [0, 0],
  );
  assert.equal(always.runs, 1);
  assert.deepEqual(handled, { a: 0, b: 0, housekeeping: 0 });
});

test('from the first job with work on, every job runs: earlier work may make a later job due', async (t) => {
  const app = await buildTestApp(t);
  const jobs = [
    countingJob('before', () => false),
    countingJob('due', () => true, 1),
    countingJob('after, not due at the probe', () => false),
  ];
  const worker = new Worker(app.deps, jobs, log);
  const handled = await worker.runOnce();
  assert.deepEqual(
    jobs.map((job) => job.runs),
    [0, 1, 1],
  );
  assert.equal(handled['due'], 1);
});

test('a probe that fails runs every job (the claims decide), and is logged', async (t) => {
  const app = await buildTestApp(t);
  const errors: string[] = [];
  const broken = {
    ...countingJob('broken', () => true),
    dueNow: (deps: Deps): DueProbe => deps.db.selectFrom('no_such_table' as 'customers').select('id') as DueProbe,
  };
  const other = countingJob('other', () => false);
  const worker = new Worker(app.deps, [broken, other], { error: (_o, message) => errors.push(message) });
  await worker.runOnce();
  assert.equal(other.runs, 1);
  assert.deepEqual(errors, ['worker due probe failed; running every job']);
});

// The idle sleep (runner.ts #sleepMs, SPEC §7). Timers and Date.now are mocked (node:test
// mock timers): the worker's sleeps are read off the mocked time, never waited for; the
// test app's clock stands still, so a wake-up time is an offset from its "now".

/** Lets the worker's promises (and database round trips) run, real setImmediate turns, until `done()`. */
async function until(done: () => boolean, ms = 10_000): Promise<void> {
  const deadline = performance.now() + ms; // performance.now is not mocked
  while (!done() && performance.now() < deadline) await new Promise((resolve) => setImmediate(resolve));
  assert.ok(done(), 'the worker did not get there');
}
/** Real time for the worker's pending promises to settle (a database round trip on PostgreSQL). */
const turns = () => until(() => false, 100).catch(() => {});

/** A started worker over `jobs`, with setTimeout and Date mocked; stopped after the test. */
async function idleWorker(t: TestContext, jobs: Job[]) {
  const app = await buildTestApp(t);
  t.mock.timers.enable({ apis: ['setTimeout', 'Date'], now: 0 });
  const worker = new Worker(app.deps, jobs, log);
  t.after(async () => {
    t.mock.timers.reset();
    await worker.stop();
  });
  worker.start();
  t.mock.timers.tick(0);
  return { app, worker, poll: app.deps.config.workerPollIntervalMs };
}

/** An idle job (its probe finds nothing) counting its probes and wake-ups asked, waking at `wake(now)`. */
function idleJob(wake: ((now: Date) => Date | null) | undefined) {
  const job = {
    ...countingJob('idle', () => {
      job.probes += 1;
      return false;
    }),
    probes: 0,
    /** Its wake-up asked for: the tick is over and the worker is about to sleep. */
    wakes: 0,
    ...(wake && {
      wakeAt: (deps: Deps) => {
        job.wakes += 1;
        return Promise.resolve(wake(deps.clock.now()));
      },
    }),
  };
  return job;
}

test('idle: the worker sleeps until the earliest wake-up, at least one poll', async (t) => {
  const soon = idleJob((now) => new Date(now.getTime() + 5 * 1000));
  const { poll } = await idleWorker(t, [idleJob(() => null), soon]);
  assert.ok(poll <= 1000, 'the wake-up is 5 s away: more than one poll');
  await until(() => soon.wakes === 1);
  await turns();
  t.mock.timers.tick(5_000 - 1);
  await turns();
  assert.equal(soon.probes, 1, 'asleep until the wake-up');
  t.mock.timers.tick(1);
  await until(() => soon.probes === 2);
});

test('idle: with nothing coming due, the worker sleeps IDLE_SLEEP_POLLS polls', async (t) => {
  const alone = idleJob(() => null);
  const { poll } = await idleWorker(t, [alone]);
  await until(() => alone.wakes === 1);
  await turns();
  t.mock.timers.tick(IDLE_SLEEP_POLLS * poll - 1);
  await turns();
  assert.equal(alone.probes, 1);
  t.mock.timers.tick(1);
  await until(() => alone.probes === 2);
});

test('idle: a wake-up sooner than a poll keeps the poll', async (t) => {
  const near = idleJob((now) => new Date(now.getTime() + 1));
  const { poll } = await idleWorker(t, [near]);
  await until(() => near.wakes === 1);
  await turns();
  t.mock.timers.tick(poll - 1);
  await turns();
  assert.equal(near.probes, 1);
  t.mock.timers.tick(1);
  await until(() => near.probes === 2);
});

test('idle: a probed job that names no wake-up keeps the poll', async (t) => {
  const unnamed = idleJob(undefined);
  const named = idleJob(() => null);
  const { poll } = await idleWorker(t, [unnamed, named]);
  await until(() => named.wakes === 1);
  await turns();
  t.mock.timers.tick(poll);
  await until(() => unnamed.probes === 2);
});

test('idle: the outbox doorbell ends the sleep one poll after the last tick', async (t) => {
  const job = idleJob(() => null);
  const { poll } = await idleWorker(t, [job]);
  await until(() => job.wakes === 1);
  await turns();
  notifyOutboxActivity();
  await turns(); // its listeners run on a (real) later turn
  t.mock.timers.tick(poll - 1);
  await turns();
  assert.equal(job.probes, 1);
  t.mock.timers.tick(1);
  await until(() => job.wakes === 2);
  // Rung long after the last tick: at once.
  await turns();
  t.mock.timers.tick(3 * poll);
  await turns();
  assert.equal(job.probes, 2);
  notifyOutboxActivity();
  await turns();
  t.mock.timers.tick(0);
  await until(() => job.probes === 3);
});
