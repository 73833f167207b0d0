// Bench scenario for automatic renewal charging (docs/performance.md, SPEC §10): N active
// subscriptions of customers with a saved Paystack authorization reach their period end; the
// renewal invoices are issued, then the worker's charge job (charges.ts chargeDueInvoices, up
// to CHARGE_CONCURRENCY charges in flight) charges them against the fake Paystack (a real
// HTTP server) answering each charge after 50 ms. Figure: invoices charged (and recorded:
// payment, settlement, renewal, events) per second, from the first claim to the last record.
// Target ≥ 200/s. Every invoice must be paid and charged exactly once. The job runs in this
// process over a SQLite file (synchronous=FULL), as one worker does; the fake's 50 ms are
// timers, so sharing the process costs it little CPU. Measures; never fails on speed.
// Alone: `node bench/charging.ts`.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../src/config.ts';
import { createDeps } from '../src/deps.ts';
import { CHARGE_CONCURRENCY, chargeDueInvoices } from '../src/billing/charges.ts';
import { createCustomer } from '../src/modules/customers/customers.service.ts';
import { createPlan } from '../src/modules/plans/plans.service.ts';
import { issueRenewalInvoices } from '../src/worker/subscriptions.jobs.ts';
import { applySuccessfulPayment } from '../src/billing/subscription-payments.ts';
import { createSubscription } from '../src/billing/subscriptions.ts';
import { ManualClock } from '../src/shared/clock.ts';
import { FakePaystack } from '../test/helpers/fake-paystack.ts';
import { saveTestCard } from '../test/helpers/payment-methods.ts';
import { DATA_ENCRYPTION_KEY, PAYSTACK_SECRET } from '../test/helpers/provider-events.ts';

/** The target (docs/performance.md). */
export const TARGET_CHARGES_PER_SECOND = 200;
/** The fake provider's answer time. */
const LATENCY_MS = 50;

export interface ChargingFigures {
  invoices: number;
  seconds: number;
  perSecond: number;
  latencyMs: number;
  concurrency: number;
}

/** Seeds, issues and charges `invoices` renewal invoices; returns the throughput. */
export async function benchCharging(
  workDir: string,
  settings: { invoices?: number },
  log: (line: string) => void,
): Promise<ChargingFigures> {
  const invoices = settings.invoices ?? 2000;
  const fake = await new FakePaystack().start();
  fake.latencyMs = LATENCY_MS;
  const config = loadConfig({
    DATABASE_URL: `sqlite:${join(workDir, 'charging.db')}`,
    PAYSTACK_SECRET_KEY: PAYSTACK_SECRET,
    PAYSTACK_API_URL: fake.url,
    DATA_ENCRYPTION_KEY,
    API_KEYS: 'bench_bootstrap_key_0123456789',
    LOG_LEVEL: 'silent',
  });
  const clock = new ManualClock(new Date('2026-01-15T10:00:00.000Z'));
  const deps = await createDeps(config, { clock });
  try {
    const plan = await createPlan(deps.db, clock, { name: 'Pro', amount: 5000, currency: 'NGN', interval: 'month' });
    for (let i = 0; i < invoices; i++) {
      const customer = await createCustomer(deps.db, clock, { email: `charge${i}@example.com` });
      const sub = await createSubscription(deps.db, deps, { customer_id: customer.id, plan_id: plan.id });
      await deps.db.transaction().execute(async (trx) => {
        await applySuccessfulPayment(trx, deps, sub.id);
        await saveTestCard(trx, deps, customer.id, 'paystack');
      });
    }
    clock.set(new Date('2026-02-15T10:00:00.000Z'));
    while ((await issueRenewalInvoices.run(deps)) > 0);

    const started = performance.now();
    while ((await chargeDueInvoices(deps)) > 0);
    const seconds = (performance.now() - started) / 1000;

    const paid = await deps.db
      .selectFrom('invoices')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('status', '=', 'paid')
      .where('period_start', '=', '2026-02-15T10:00:00.000Z')
      .executeTakeFirstOrThrow();
    if (Number(paid.n) !== invoices) throw new Error(`charging: ${paid.n} of ${invoices} renewal invoices paid`);
    if (fake.totalCharges !== invoices || [...fake.chargesByReference.values()].some((n) => n !== 1)) {
      throw new Error(`charging: ${fake.totalCharges} charges for ${invoices} invoices`);
    }
    const perSecond = invoices / seconds;
    log(
      `charging: ${invoices} renewal invoices charged and recorded in ${seconds.toFixed(2)} s → ` +
        `${Math.round(perSecond)} invoices/s (provider latency ${LATENCY_MS} ms, ≤ ${CHARGE_CONCURRENCY} in flight; ` +
        `target ≥ ${TARGET_CHARGES_PER_SECOND}/s: ${perSecond >= TARGET_CHARGES_PER_SECOND ? 'met' : 'NOT met'}); ` +
        `each charged once`,
    );
    return { invoices, seconds, perSecond, latencyMs: LATENCY_MS, concurrency: CHARGE_CONCURRENCY };
  } finally {
    await deps.close();
    await fake.close();
  }
}

if (import.meta.main) {
  const dir = mkdtempSync(join(tmpdir(), 'bench-charging-'));
  const invoices = Number(process.env.BENCH_CHARGES ?? 2000);
  try {
    await benchCharging(dir, { invoices }, (line) => process.stdout.write(`${line}\n`));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
