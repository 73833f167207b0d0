// The runner's due probe (Job.dueNow, runner.ts): a tick asks every probe in one statement and
// runs only from the first job with work on; a job without a probe runs every tick; a failing
// probe runs every job. Checked on the database the suite runs on.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sql } from 'kysely';
import { buildTestApp } from '../../test/helpers/app.ts';
import type { Deps } from '../deps.ts';
import type { DueProbe, Job } from './job.ts';
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
