// A renewal batch and its charge batch bind their id lists as one parameter (db/bulk.ts:
// inList, rowsTable); each such statement must still find its rows through an index on the
// listed column (or a join's key), never by walking a table or a wide index such as every
// open dunning case by status. SQLite keeps no statistics, so its planner's guesses are what
// production runs: each plan is checked there (EXPLAIN QUERY PLAN). PostgreSQL plans by
// statistics; there, with sequential scans disfavoured, no statement may need one.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CompiledQuery, type KyselyPlugin, type RootOperationNode } from 'kysely';
import { appWithFakeProviders } from '../../test/helpers/provider-apps.ts';
import { ON_POSTGRES } from '../../test/helpers/database.ts';
import { createSubscription } from '../../test/helpers/factories.ts';
import { saveTestPaymentMethod } from '../../test/helpers/payment-methods.ts';
import type { Deps } from '../deps.ts';
import { issueRenewalInvoices } from '../worker/subscriptions.jobs.ts';
import { applySuccessfulPayment } from './subscription-payments.ts';
import { chargeDueInvoices } from './charges.ts';

/** Records every query run through it (compiled later by the app's own executor). */
function recorder(): KyselyPlugin & { nodes: RootOperationNode[] } {
  const nodes: RootOperationNode[] = [];
  return {
    nodes,
    transformQuery: ({ node }) => {
      nodes.push(node);
      return node;
    },
    transformResult: async ({ result }) => result,
  };
}

/** The columns a statement lists by one parameter: `"col" in (select value from json_each(?))` / `= any($1)`. */
function listedColumns(text: string): string[] {
  return [...text.matchAll(/"?([a-z_]+)"? (?:in \(select value from json_each|= any)\(/g)].map((m) => m[1]!);
}

/** True when `text` compares `column` with another table's column (a join's key). */
function isJoinKey(text: string, column: string): boolean {
  return new RegExp(`\\b${column}"? = "?[a-z_]+"?\\."?[a-z_]+`).test(text);
}

test('a renewal and its charge batch: every statement with a one-parameter list reads an index on what it lists', async (t) => {
  const app = await appWithFakeProviders(t);
  app.paystack.webhookTarget = { url: app.baseUrl };
  let periodEnd = '';
  for (let i = 0; i < 3; i++) {
    const created = await createSubscription(app, { plan: { currency: 'NGN', amount: 5000 } });
    const sub = await app.deps.db.transaction().execute((trx) => applySuccessfulPayment(trx, app.deps, created.id));
    await saveTestPaymentMethod(app, sub.customer_id, 'paystack');
    periodEnd = periodEnd > sub.current_period_end! ? periodEnd : sub.current_period_end!;
  }
  app.clock.set(new Date(periodEnd));

  const plugin = recorder();
  const deps: Deps = { ...app.deps, db: app.deps.db.withPlugin(plugin) };
  assert.equal(await issueRenewalInvoices.run(deps), 3);
  assert.equal(await chargeDueInvoices(deps), 3);
  const paid = await app.deps.db.selectFrom('invoices').select('id').where('status', '=', 'paid').execute();
  assert.equal(paid.length, 6, 'the three renewals were charged and recorded (with the three first invoices)');

  const executor = app.deps.db.getExecutor();
  const listed = plugin.nodes
    .map((node) => executor.compileQuery(node, { queryId: 'plan' }))
    .filter((query) => listedColumns(query.sql).length > 0 || /json_each\(|unnest\(|= any\(/.test(query.sql));
  const texts = new Set(listed.map((query) => query.sql));
  // The batch paths' lists: lock reads, the claim's reads, the record's writes.
  for (const table of ['invoices', 'subscriptions', 'invoice_payment_attempts', 'payment_methods', 'dunning_cases']) {
    assert.ok(
      [...texts].some((text) => text.includes(`from "${table}" where`) || text.includes(`update "${table}"`)),
      `a listed statement on ${table} ran`,
    );
  }
  assert.ok(texts.size >= 12, `${texts.size} distinct statements with a one-parameter list`);

  const seen = new Set<string>();
  for (const query of listed) {
    if (seen.has(query.sql)) continue;
    seen.add(query.sql);
    if (ON_POSTGRES) {
      await app.deps.db.transaction().execute(async (trx) => {
        await trx.executeQuery(CompiledQuery.raw('set local enable_seqscan = off'));
        const { rows } = await trx.executeQuery<{ 'QUERY PLAN': unknown }>(
          CompiledQuery.raw(`explain (format json) ${query.sql}`, [...query.parameters]),
        );
        const plan = JSON.stringify(rows[0]!['QUERY PLAN']);
        assert.doesNotMatch(plan, /"Seq Scan"/, `${query.sql}\n${plan}`);
      });
      continue;
    }
    const { rows } = await app.deps.db.executeQuery<{ detail: string }>(
      CompiledQuery.raw(`explain query plan ${query.sql}`, [...query.parameters]),
    );
    const columns = listedColumns(query.sql);
    for (const { detail } of rows) {
      if (!/^(SEARCH|SCAN) /.test(detail) || / json_each /.test(detail)) continue;
      // The index's constraints, e.g. `(job=? AND row_id=?)`: one must be the list (or a join's key).
      const constrained = [...(/INDEX \S+ \(([^)]*)\)/.exec(detail)?.[1] ?? '').matchAll(/(\w+)[=><]/g)].map(
        (m) => m[1]!,
      );
      assert.ok(
        detail.startsWith('SEARCH ') &&
          constrained.some((column) => columns.includes(column) || isJoinKey(query.sql, column)),
        `${query.sql}\nreads by ${detail}`,
      );
    }
  }
});
