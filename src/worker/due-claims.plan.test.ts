// The worker's claims read only their own scope's due rows (SPEC §7, §11; migrations 0028, 0038): the
// query plan of each real-time claim reads the real-time partial index of its table (which
// holds no clock row) and no other index or scan of that table; a clock's claims read the
// clock's own index. Checked on the database the suite runs on (EXPLAIN QUERY PLAN / EXPLAIN).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CompiledQuery, type Compilable, type Transaction } from 'kysely';
import { buildTestApp } from '../../test/helpers/app.ts';
import { ON_POSTGRES } from '../../test/helpers/database.ts';
import { dueChargesQuery } from '../billing/charges.ts';
import type { Database } from '../db/database.ts';
import { REAL_TIME, type JobScope } from '../db/scope.ts';
import { incompleteDueQuery, pastDueQuery, periodEndDueQuery } from './subscriptions.jobs.ts';
import { casesDueQuery } from './dunning.jobs.ts';
import { JOBS } from './jobs.ts';
import { dueProbe } from './runner.ts';

const NOW = '2026-03-01T00:00:00.000Z';
const CLOCK: JobScope = { testClockId: 'clock_01JD3Q7Z8X9Y0A1B2C3D4E5F6G' };

/**
 * Each claim, and the indexes of `subscriptions` / `invoices` it may read: due indexes led by
 * test_clock_id (the plan must constrain it: the scope's own prefix), or primary keys.
 */
const CLAIMS: {
  name: string;
  query: (trx: Transaction<Database>, scope: JobScope) => Compilable<unknown>;
  allowed: string[];
  /** An index PostgreSQL's planner may read outside the scope's prefix over empty tables. */
  acrossScopesOnPostgres?: string;
}[] = [
  {
    name: 'renewals',
    query: (trx, scope) => periodEndDueQuery(trx, scope, NOW, false).limit(50),
    allowed: ['subscriptions_renewal_due'],
  },
  {
    name: 'period-end cancellations',
    query: (trx, scope) => periodEndDueQuery(trx, scope, NOW, true).limit(50),
    allowed: ['subscriptions_renewal_due'],
  },
  {
    name: 'charges',
    query: (trx, scope) => dueChargesQuery(trx, NOW, scope).limit(100),
    // PostgreSQL may pick either scope-led index of open invoices over an empty table.
    allowed: ['invoices_charge_due', 'invoices_open_by_due_at'],
  },
  {
    // The overdue invoices of the scope, then their subscriptions by primary key (or, as the
    // planner likes, the scope's prefix of the subscriptions' due index).
    name: 'past due',
    query: (trx, scope) => pastDueQuery(trx, scope, NOW, NOW).limit(50),
    allowed: [
      'invoices_open_by_due_at',
      'invoices_charge_due',
      'subscriptions_pkey',
      'sqlite_autoindex_subscriptions_1',
      'subscriptions_renewal_due',
    ],
  },
  {
    name: 'incomplete expiry',
    query: (trx, scope) => incompleteDueQuery(trx, scope, NOW, NOW).limit(50),
    allowed: ['subscriptions_incomplete_due'],
  },
  {
    // PostgreSQL over an empty table costs this index and the lists' (status, next_action_at,
    // id) the same and may pick either; SQLite must read the scope's own.
    name: 'dunning steps',
    query: (trx, scope) => casesDueQuery(trx, scope, NOW).limit(50),
    allowed: ON_POSTGRES ? ['dunning_cases_due', 'dunning_cases_by_status_next_action_at'] : ['dunning_cases_due'],
    acrossScopesOnPostgres: 'dunning_cases_by_status_next_action_at',
  },
];

/**
 * How the plan of `query` reads `subscriptions` and `invoices`: the index names it uses, and
 * whether it scans either table whole. PostgreSQL is told not to prefer sequential scans (an
 * empty test table would make any plan a seq scan), so the plan shows the indexes it can use.
 */
async function planOf(trx: Transaction<Database>, query: Compilable<unknown>) {
  const { sql, parameters } = query.compile();
  const indexes = new Set<string>();
  /** Lines of the plan that constrain test_clock_id in an index search. */
  let scoped = 0;
  let fullScan = false;
  if (ON_POSTGRES) {
    await trx.executeQuery(CompiledQuery.raw('set local enable_seqscan = off'));
    await trx.executeQuery(CompiledQuery.raw('set local enable_bitmapscan = off'));
    const { rows } = await trx.executeQuery<{ 'QUERY PLAN': string }>(
      CompiledQuery.raw(`explain ${sql}`, [...parameters]),
    );
    for (const { 'QUERY PLAN': line } of rows) {
      const index = /Index (?:Only )?Scan(?: Backward)? using (\w+) on (subscriptions|invoices|dunning_cases)\b/.exec(
        line,
      );
      if (index) indexes.add(index[1]!);
      if (/Index Cond: .*test_clock_id (IS NULL|= )/.test(line)) scoped += 1;
      if (/Seq Scan on (subscriptions|invoices|dunning_cases|worker_row_failures)\b/.test(line)) fullScan = true;
    }
  } else {
    const { rows } = await trx.executeQuery<{ detail: string }>(
      CompiledQuery.raw(`explain query plan ${sql}`, [...parameters]),
    );
    for (const { detail } of rows) {
      const index = /^(?:SEARCH|SCAN) (subscriptions|invoices|dunning_cases) USING (?:COVERING )?INDEX (\w+)/.exec(
        detail,
      );
      if (index) indexes.add(index[2]!);
      if (/USING (?:COVERING )?INDEX \w+ \(test_clock_id=\?/.test(detail)) scoped += 1;
      else if (/^SCAN (subscriptions|invoices|dunning_cases|worker_row_failures|f)\b/.test(detail)) fullScan = true;
    }
  }
  return { indexes: [...indexes].sort(), scoped, fullScan, text: sql };
}

test('each claim reads its due index within its own scope: real time no clock row, a clock only its own rows', async (t) => {
  const app = await buildTestApp(t);
  await app.deps.db.transaction().execute(async (trx) => {
    for (const claim of CLAIMS) {
      for (const scope of [REAL_TIME, CLOCK]) {
        const plan = await planOf(trx, claim.query(trx, scope));
        const label = `${claim.name} (${scope.testClockId === null ? 'real time' : 'clock'})`;
        assert.equal(plan.fullScan, false, `${label} scans a table whole: ${plan.text}`);
        for (const index of plan.indexes) {
          assert.ok(
            claim.allowed.includes(index),
            `${label} reads index ${index} (allowed: ${claim.allowed.join(', ')})`,
          );
        }
        // Every table it reads by a due index is read within the scope's test_clock_id prefix.
        const dueIndexes = plan.indexes.filter(
          (index) => !/pkey|autoindex/.test(index) && !(ON_POSTGRES && index === claim.acrossScopesOnPostgres),
        ).length;
        assert.ok(plan.scoped >= dueIndexes, `${label} reads a due index beyond its scope: ${plan.text}`);
      }
    }
  });
});

test("the idle worker's one due probe reads only real-time due indexes: no clock row, no scan", async (t) => {
  const app = await buildTestApp(t);
  const { asked, query } = dueProbe(app.deps, JOBS);
  assert.ok(query, 'the worker has probes');
  // Every clock-aware job is probed (a job left out would run its transaction every tick).
  for (const job of JOBS.filter((job) => job.nextDueAt)) assert.ok(asked.includes(job), `${job.name} has no probe`);
  await app.deps.db.transaction().execute(async (trx) => {
    const plan = await planOf(trx, query);
    assert.equal(plan.fullScan, false, `the probe scans a table whole: ${plan.text}`);
    // Draft finalization reads an index across scopes: drafts are short-lived and few.
    const acrossScopes = ['invoices_due_for_finalization', 'invoices_by_status_due_at'];
    const dueIndexes = plan.indexes.filter(
      (index) => !/pkey|autoindex/.test(index) && !acrossScopes.includes(index),
    ).length;
    assert.ok(dueIndexes > 0, `the probe reads no due index: ${plan.indexes.join(', ')}`);
    assert.ok(plan.scoped >= dueIndexes, `the probe reads a due index beyond real time: ${plan.text}`);
  });
});
