// Closing invoices as a property (SPEC §9): random histories of void, mark-uncollectible and
// settlement on a few invoices — some requests sent one after another, some at once — through
// the real POST routes. After each history, whatever the interleaving:
//   - every answer is 200 or 409 (never 5xx), and a request sent alone gets exactly what the
//     transition table says;
//   - each invoice's events, in order, are a path of the transition table from `open` to its
//     stored status (so never a paid void invoice), one event per successful change;
//   - `voided_at` / `paid_at` are set exactly for void / paid invoices;
//   - the dunning case chasing an invoice is closed (`cancelled`) exactly when a void or mark
//     of it succeeded.
// INVOICE_PROPERTY_RUNS histories per database (default 15); INVOICE_PROPERTY_SEED replays one.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { buildTestApp, type TestApp } from '../../../test/helpers/app.ts';
import { createSubscription } from '../../../test/helpers/factories.ts';
import { issueTestInvoice, markTestInvoicePaid, openTestDunningCase } from '../../../test/helpers/invoices.ts';
import { type InvoiceEvent, type InvoiceStatus, nextInvoiceStatus } from './invoices.status.ts';
import type { DunningCase } from '../dunning/dunning.schemas.ts';
import { ForbiddenInvoiceTransitionError, type Invoice } from './invoices.lifecycle.ts';

const RUNS = Number(process.env.INVOICE_PROPERTY_RUNS ?? 15);
const SEED = process.env.INVOICE_PROPERTY_SEED === undefined ? undefined : Number(process.env.INVOICE_PROPERTY_SEED);

const ACTIONS = ['void', 'mark', 'pay'] as const;
type Action = (typeof ACTIONS)[number];
const EVENT_OF: Record<Action, InvoiceEvent> = { void: 'void', mark: 'mark_uncollectible', pay: 'paid' };
const TOPIC_EVENT: Record<string, InvoiceEvent> = {
  'invoice.voided': 'void',
  'invoice.marked_uncollectible': 'mark_uncollectible',
  'invoice.paid': 'paid',
};

interface Step {
  invoice: number;
  action: Action;
}

/** A history: how many invoices, and groups of steps; the steps of one group are sent at once. */
const histories = fc.record({
  invoices: fc.integer({ min: 1, max: 3 }),
  groups: fc.array(
    fc.array(fc.record({ invoice: fc.nat(2), action: fc.constantFrom(...ACTIONS) }), { minLength: 1, maxLength: 3 }),
    { minLength: 1, maxLength: 5 },
  ),
});

/** Runs one step: the API for void / mark, settlement's transition for pay. 200, or 409 when refused. */
async function run(app: TestApp, id: string, action: Action): Promise<number> {
  if (action === 'pay') {
    try {
      await markTestInvoicePaid(app, id);
      return 200;
    } catch (error) {
      if (error instanceof ForbiddenInvoiceTransitionError) return 409;
      throw error;
    }
  }
  const path = `/api/invoices/${id}/${action === 'void' ? 'void' : 'mark-uncollectible'}`;
  return (await app.request('POST', path)).status;
}

test('any history of void, mark-uncollectible and pay follows the transition table, one event per change', async (t) => {
  const app = await buildTestApp(t);
  await fc.assert(
    fc.asyncProperty(histories, async ({ invoices: count, groups }) => {
      // Trialing subscriptions: the subscription flows issue no invoice of their own (SPEC §9).
      const invoices: Invoice[] = [];
      const cases: DunningCase[] = [];
      for (let i = 0; i < count; i += 1) {
        const invoice = await issueTestInvoice(app, (await createSubscription(app, { trialPeriodDays: 30 })).id);
        invoices.push(invoice);
        cases.push(await openTestDunningCase(app, invoice));
      }
      const model: InvoiceStatus[] = invoices.map(() => 'open');
      const closedByApi = invoices.map(() => false);
      for (const group of groups) {
        const steps = group.filter((step: Step) => step.invoice < count);
        const statuses = await Promise.all(steps.map((step) => run(app, invoices[step.invoice]!.id, step.action)));
        steps.forEach((step, i) => {
          const status = statuses[i]!;
          assert.ok(status === 200 || status === 409, `${step.action}: ${status}`);
          if (steps.length === 1) {
            const next = nextInvoiceStatus(model[step.invoice]!, EVENT_OF[step.action]);
            assert.equal(status, next ? 200 : 409, `${step.action} from ${model[step.invoice]}`);
          }
          if (status === 200 && step.action !== 'pay') closedByApi[step.invoice] = true;
        });
        // The model follows the stored state (a group's order is the database's to choose).
        for (const step of steps) {
          model[step.invoice] = (await app.request('GET', `/api/invoices/${invoices[step.invoice]!.id}`)).body.status;
        }
      }
      const rows = await app.deps.db
        .selectFrom('events')
        .select(['topic', 'data'])
        .where('topic', 'in', Object.keys(TOPIC_EVENT))
        .orderBy('id')
        .execute();
      for (const [i, invoice] of invoices.entries()) {
        const stored = (await app.request('GET', `/api/invoices/${invoice.id}`)).body;
        let status: InvoiceStatus = 'open';
        for (const row of rows.filter((r) => (JSON.parse(r.data) as { id: string }).id === invoice.id)) {
          const next = nextInvoiceStatus(status, TOPIC_EVENT[row.topic]!);
          assert.ok(next, `${row.topic} from ${status} is not in the table`);
          assert.equal((JSON.parse(row.data) as { status: string }).status, next.to);
          status = next.to;
        }
        assert.equal(stored.status, status, 'the events replay to the stored status');
        assert.equal(stored.voided_at !== null, stored.status === 'void');
        assert.equal(stored.paid_at !== null, stored.status === 'paid');
        assert.equal(stored.amount_remaining, stored.status === 'paid' ? 0 : stored.amount_due);
        const dunning: DunningCase = (await app.request('GET', `/api/dunning/cases/${cases[i]!.id}`)).body;
        assert.equal(dunning.status, closedByApi[i] ? 'cancelled' : 'open');
      }
    }),
    { numRuns: RUNS, seed: SEED },
  );
});
