// /api/tax-rates (SPEC §14): the record, and the rates an invoice applies by precedence —
// subscription > plan > customer > DEFAULT_TAX_RATE_IDS — archived ones included where
// attached already, exempt and reverse-charged customers untaxed.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp, type TestApp, type TestResponse } from '../../test/helpers/app.ts';
import { createCustomer, createPlan } from '../../test/helpers/factories.ts';
import { ConfigError } from '../config.ts';
import { checkDefaultTaxRates } from '../modules/tax-rates/tax-rates.service.ts';

const UNKNOWN_RATE = 'txr_01JD3Q7Z8X9Y0A1B2C3D4E5F6G';

async function createRate(app: TestApp, body: Record<string, unknown>) {
  const res = await app.request('POST', '/api/tax-rates', { body });
  assert.equal(res.status, 201, res.text);
  return res.body;
}

/** The first invoice of a new subscription (no trial: issued at once) of `customerId` on `planId`. */
async function firstInvoice(app: TestApp, customerId: string, planId: string, extra: Record<string, unknown> = {}) {
  const sub = await app.request('POST', '/api/subscriptions', {
    body: { customer_id: customerId, plan_id: planId, ...extra },
  });
  assert.equal(sub.status, 201, sub.text);
  const invoices = await app.request('GET', `/api/invoices?subscription_id=${sub.body.id}`);
  assert.equal(invoices.body.data.length, 1);
  return { subscription: sub.body, invoice: invoices.body.data[0] };
}

test('tax rates: create, get, list with filters, update; percentage and inclusive are immutable; bad input is a 400 that stores nothing', async (t) => {
  const app = await buildTestApp(t);
  const vat = await createRate(app, {
    display_name: 'VAT',
    percentage: 19,
    inclusive: false,
    country: 'DE',
    jurisdiction: 'DE',
  });
  assert.match(vat.id, /^txr_[0-9A-Z]{26}$/);
  assert.deepEqual(vat, {
    id: vat.id,
    display_name: 'VAT',
    percentage: 19,
    inclusive: false,
    country: 'DE',
    state: null,
    jurisdiction: 'DE',
    active: true,
    metadata: {},
    created_at: '2026-01-15T10:00:00.000Z',
    updated_at: '2026-01-15T10:00:00.000Z',
  });
  assert.deepEqual((await app.request('GET', `/api/tax-rates/${vat.id}`)).body, vat);
  const sales = await createRate(app, { display_name: 'Sales tax', percentage: 7.2575, inclusive: true, state: 'CA' });
  assert.equal(sales.percentage, 7.2575);

  for (const [body, field, message] of [
    [{ display_name: 'X', percentage: 19.00001, inclusive: false }, 'percentage', /at most 4 decimals/],
    [{ display_name: 'X', percentage: 100.5, inclusive: false }, 'percentage', /100/],
    [{ display_name: 'X', percentage: -1, inclusive: false }, 'percentage', /0/],
    [{ display_name: 'X', percentage: 19, inclusive: false, country: 'de' }, 'country', /ISO 3166-1 alpha-2/],
    [{ display_name: 'X', percentage: 19, inclusive: false, country: 'XX' }, 'country', /ISO 3166-1 alpha-2/],
    [{ display_name: 'X', percentage: 19 }, 'inclusive', /^Inclusive is required$/],
  ] as const) {
    const res = await app.request('POST', '/api/tax-rates', { body });
    assert.equal(res.status, 400, JSON.stringify(body));
    assert.equal(res.body.code, 'validation_error');
    assert.equal(res.body.errors[0].name, field, res.text);
    assert.match(res.body.message, message);
  }

  const list = await app.request('GET', '/api/tax-rates?limit=1&sort_by=display_name&sort_order=asc');
  assert.deepEqual(list.body.meta, { total: 2, page: 0, limit: 1 });
  assert.deepEqual(
    list.body.data.map((rate: { id: string }) => rate.id),
    [sales.id],
  );
  const inclusive = await app.request('GET', '/api/tax-rates?inclusive=true');
  assert.deepEqual(
    inclusive.body.data.map((rate: { id: string }) => rate.id),
    [sales.id],
  );

  app.clock.advance(60_000);
  const archived = await app.request('PATCH', `/api/tax-rates/${vat.id}`, {
    body: { active: false, display_name: 'MwSt', metadata: { filing: 'monthly' } },
  });
  assert.equal(archived.status, 200);
  assert.deepEqual(
    [archived.body.active, archived.body.display_name, archived.body.metadata, archived.body.updated_at],
    [false, 'MwSt', { filing: 'monthly' }, '2026-01-15T10:01:00.000Z'],
  );
  const active = await app.request('GET', '/api/tax-rates?active=true');
  assert.deepEqual(
    active.body.data.map((rate: { id: string }) => rate.id),
    [sales.id],
  );
  for (const field of ['percentage', 'inclusive']) {
    const res: TestResponse = await app.request('PATCH', `/api/tax-rates/${vat.id}`, { body: { [field]: 7 } });
    assert.equal(res.status, 400);
    assert.match(res.body.message, new RegExp(`^${field} cannot be changed`));
  }
  assert.equal((await app.request('GET', `/api/tax-rates/${vat.id}`)).body.percentage, 19);
  assert.equal((await app.request('GET', `/api/tax-rates/${UNKNOWN_RATE}`)).status, 404);
  assert.equal((await app.request('GET', '/api/tax-rates/nope')).status, 404);
  assert.equal((await app.request('PATCH', `/api/tax-rates/${UNKNOWN_RATE}`, { body: { active: true } })).status, 404);
  assert.equal((await app.request('GET', '/api/tax-rates')).body.meta.total, 2);
});

test('an invoice takes the most specific non-empty list: subscription > plan > customer > DEFAULT_TAX_RATE_IDS', async (t) => {
  const defaultId = 'txr_01JD3Q7Z8X9Y0A1B2C3D4E5F6H';
  const app = await buildTestApp(t, { env: { DEFAULT_TAX_RATE_IDS: `${defaultId}, ${UNKNOWN_RATE}` } });
  // The default rate is created with the id the configuration names (ids are otherwise random).
  await app.deps.db
    .insertInto('tax_rates')
    .values({
      id: defaultId,
      display_name: 'Default VAT',
      percentage_e4: 75000,
      inclusive: false,
      country: null,
      state: null,
      jurisdiction: null,
      active: true,
      metadata: '{}',
      created_at: '2026-01-15T10:00:00.000Z',
      updated_at: '2026-01-15T10:00:00.000Z',
    })
    .execute();
  const subRate = await createRate(app, { display_name: 'Sub tax', percentage: 19, inclusive: false });
  const planRate = await createRate(app, { display_name: 'Plan tax', percentage: 10, inclusive: false });
  const customerRate = await createRate(app, { display_name: 'Customer tax', percentage: 5, inclusive: false });
  const eur = { currency: 'EUR', amount: 4900 };
  const taxedPlan = await createPlan(app, { ...eur, tax_rate_ids: [planRate.id] });
  assert.deepEqual(taxedPlan.tax_rate_ids, [planRate.id]);
  const plainPlan = await createPlan(app, eur);
  const taxedCustomer = await createCustomer(app, { tax_rate_ids: [customerRate.id] });
  assert.deepEqual(taxedCustomer.tax_rate_ids, [customerRate.id]);
  const plainCustomer = await createCustomer(app);

  const taxOf = (invoice: { total_tax_amounts: { tax_rate_id: string; amount: number }[] }) =>
    invoice.total_tax_amounts.map((amount) => [amount.tax_rate_id, amount.amount]);
  const bySubscription = await firstInvoice(app, taxedCustomer.id, taxedPlan.id, { tax_rate_ids: [subRate.id] });
  assert.deepEqual(bySubscription.subscription.tax_rate_ids, [subRate.id]);
  assert.deepEqual(taxOf(bySubscription.invoice), [[subRate.id, 931]]);
  assert.deepEqual(
    [bySubscription.invoice.total_tax, bySubscription.invoice.total, bySubscription.invoice.amount_due],
    [931, 5831, 5831],
  );
  const taxLine = bySubscription.invoice.lines[1];
  assert.deepEqual([taxLine.kind, taxLine.tax_rate_id, taxLine.amount], ['tax', subRate.id, 931]);
  assert.deepEqual(taxOf((await firstInvoice(app, taxedCustomer.id, taxedPlan.id)).invoice), [[planRate.id, 490]]);
  assert.deepEqual(taxOf((await firstInvoice(app, taxedCustomer.id, plainPlan.id)).invoice), [[customerRate.id, 245]]);
  // The configured id with no tax rate is left out; the one that exists applies.
  const byDefault = await firstInvoice(app, plainCustomer.id, plainPlan.id);
  assert.deepEqual(taxOf(byDefault.invoice), [[defaultId, 368]]);
  // The upcoming renewal's preview composes the same taxes as issuing.
  const preview = await app.request('POST', '/api/invoices/preview', {
    body: { subscription_id: bySubscription.subscription.id },
  });
  assert.equal(preview.status, 200, preview.text);
  assert.deepEqual(taxOf(preview.body), [[subRate.id, 931]]);
  assert.deepEqual([preview.body.total_tax, preview.body.total], [931, 5831]);
});

test('archived rates cannot be attached anew but keep applying where attached; unknown ones are a 400', async (t) => {
  const app = await buildTestApp(t);
  const rate = await createRate(app, { display_name: 'VAT', percentage: 19, inclusive: true });
  const plan = await createPlan(app, { currency: 'EUR', amount: 4900, tax_rate_ids: [rate.id] });
  const customer = await createCustomer(app, { tax_rate_ids: [rate.id] });
  await app.request('PATCH', `/api/tax-rates/${rate.id}`, { body: { active: false } });

  const archivedMessage = `tax_rate_ids: tax rate ${rate.id} is archived and cannot be newly attached`;
  const attempts = [
    app.request('POST', '/api/plans', {
      body: { name: 'P', amount: 1, currency: 'EUR', interval: 'month', tax_rate_ids: [rate.id] },
    }),
    app.request('POST', '/api/customers', { body: { email: 'new@example.com', tax_rate_ids: [rate.id] } }),
    app.request('POST', '/api/subscriptions', {
      body: { customer_id: customer.id, plan_id: plan.id, tax_rate_ids: [rate.id] },
    }),
  ];
  for (const res of await Promise.all(attempts)) {
    assert.equal(res.status, 400, res.text);
    assert.equal(res.body.message, archivedMessage);
  }
  const unknown = await app.request('POST', '/api/customers', {
    body: { email: 'other@example.com', tax_rate_ids: [UNKNOWN_RATE] },
  });
  assert.equal(unknown.status, 400);
  assert.equal(unknown.body.message, `tax_rate_ids: tax rate ${UNKNOWN_RATE} does not exist`);
  assert.equal((await app.request('GET', '/api/customers')).body.meta.total, 1);
  assert.equal((await app.request('GET', '/api/subscriptions')).body.meta.total, 0);

  // Sending the customer's own list back is no new attachment.
  const kept = await app.request('PATCH', `/api/customers/${customer.id}`, {
    body: { name: 'Ada', tax_rate_ids: [rate.id] },
  });
  assert.equal(kept.status, 200, kept.text);
  // The plan still carries the archived inclusive rate: €49.00 shows 7.82 of VAT, total unchanged.
  const { invoice } = await firstInvoice(app, customer.id, plan.id);
  assert.deepEqual([invoice.subtotal, invoice.total_tax, invoice.total, invoice.amount_due], [4900, 782, 4900, 4900]);
  assert.deepEqual(invoice.total_tax_amounts, [
    { tax_rate_id: rate.id, display_name: 'VAT', percentage: 19, inclusive: true, amount: 782 },
  ]);
  assert.equal(invoice.lines[1].inclusive, true);
});

test('DEFAULT_TAX_RATE_IDS is checked at startup: every id must be a tax rate (archived ones too), else a ConfigError names the missing', async (t) => {
  const app = await buildTestApp(t);
  const created = await app.request('POST', '/api/tax-rates', {
    body: { display_name: 'VAT', percentage: 20, inclusive: false },
  });
  assert.equal(created.status, 201, created.text);
  const archived = await app.request('PATCH', `/api/tax-rates/${created.body.id}`, { body: { active: false } });
  assert.equal(archived.status, 200, archived.text);
  await checkDefaultTaxRates(app.deps.db, []);
  await checkDefaultTaxRates(app.deps.db, [created.body.id]);
  const typo = 'txr_01JZZZZZZZZZZZZZZZZZZZZZZZ';
  await assert.rejects(
    checkDefaultTaxRates(app.deps.db, [created.body.id, typo]),
    (error: unknown) =>
      error instanceof ConfigError &&
      error.variable === 'DEFAULT_TAX_RATE_IDS' &&
      error.message.startsWith(`DEFAULT_TAX_RATE_IDS names ${typo}: no such tax rate in this database`),
  );
});
