// A customer's tax identity (SPEC §14): tax ids checked for format, an address, and
// `tax_exempt` — `exempt` pays no tax, `reverse` pays none and its invoices say so.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildTestApp } from '../../test/helpers/app.ts';
import { createPlan } from '../../test/helpers/factories.ts';

const ADDRESS = { country: 'DE', line1: 'Unter den Linden 1', city: 'Berlin', postal_code: '10117' };

test('tax ids, address and tax_exempt: set on create, changed on update, shown; malformed ones are a 400 that changes nothing', async (t) => {
  const app = await buildTestApp(t);
  const created = await app.request('POST', '/api/customers', {
    body: {
      email: 'einkauf@example.de',
      tax_exempt: 'reverse',
      tax_ids: [{ type: 'eu_vat', value: 'DE123456789' }],
      address: ADDRESS,
    },
  });
  assert.equal(created.status, 201, created.text);
  const { id } = created.body;
  assert.deepEqual(
    [created.body.tax_exempt, created.body.tax_ids, created.body.address, created.body.tax_rate_ids],
    ['reverse', [{ type: 'eu_vat', value: 'DE123456789' }], ADDRESS, []],
  );
  assert.deepEqual((await app.request('GET', `/api/customers/${id}`)).body.address, ADDRESS);
  const plain = await app.request('POST', '/api/customers', { body: { email: 'plain@example.com' } });
  assert.deepEqual([plain.body.tax_exempt, plain.body.tax_ids, plain.body.address], ['none', [], null]);

  for (const [body, field, message] of [
    [{ tax_ids: [{ type: 'eu_vat', value: '123456789' }] }, 'tax_ids.0.value', /not a valid eu_vat number/],
    [{ tax_ids: [{ type: 'gb_vat', value: 'GB12' }] }, 'tax_ids.0.value', /not a valid gb_vat number/],
    [{ address: { ...ADDRESS, country: 'ZZZ' } }, 'address.country', /at most 2 characters/],
    [{ address: { ...ADDRESS, country: 'XX' } }, 'address.country', /ISO 3166-1 alpha-2/],
    [{ address: { country: 'DE', line1: 'x' } }, 'address.city', /address.city is required/],
    [{ tax_exempt: 'sometimes' }, 'tax_exempt', /must be one of: none, exempt, reverse/],
    [{ tax_ids: [{ type: 'us_ein', value: '12-3456789' }] }, 'tax_ids.0.type', /must be one of: eu_vat/],
  ] as const) {
    for (const [method, path, extra] of [
      ['POST', '/api/customers', { email: 'bad@example.com' }],
      ['PATCH', `/api/customers/${id}`, {}],
    ] as const) {
      const res = await app.request(method, path, { body: { ...extra, ...body } });
      assert.equal(res.status, 400, `${method} ${JSON.stringify(body)}: ${res.text}`);
      assert.equal(res.body.code, 'validation_error');
      assert.match(res.body.message, message);
      assert.equal(res.body.errors[0].name, field, res.text);
    }
  }
  assert.equal((await app.request('GET', '/api/customers')).body.meta.total, 2);

  const updated = await app.request('PATCH', `/api/customers/${id}`, {
    body: { tax_exempt: 'exempt', tax_ids: [{ type: 'gb_vat', value: 'GB 123 4567 89' }], address: null },
  });
  assert.equal(updated.status, 200, updated.text);
  assert.deepEqual(
    [updated.body.tax_exempt, updated.body.tax_ids, updated.body.address],
    ['exempt', [{ type: 'gb_vat', value: 'GB 123 4567 89' }], null],
  );
  const events = await app.request('GET', '/api/events?topic=customer.updated');
  assert.equal(events.body.meta.total, 1);
  assert.equal(events.body.data[0].data.tax_exempt, 'exempt');
});

test('a reverse-charged customer is invoiced without tax and the invoice says reverse_charge; an exempt one without tax either', async (t) => {
  const app = await buildTestApp(t);
  const rate = await app.request('POST', '/api/tax-rates', {
    body: { display_name: 'VAT', percentage: 19, inclusive: false },
  });
  const plan = await createPlan(app, { currency: 'EUR', amount: 4900, tax_rate_ids: [rate.body.id] });
  const invoiceOf = async (taxExempt: string) => {
    const customer = await app.request('POST', '/api/customers', {
      body: { email: `${taxExempt}@example.com`, tax_exempt: taxExempt },
    });
    const sub = await app.request('POST', '/api/subscriptions', {
      body: { customer_id: customer.body.id, plan_id: plan.id },
    });
    return (await app.request('GET', `/api/invoices?subscription_id=${sub.body.id}`)).body.data[0];
  };
  const summary = (invoice: Record<string, unknown> & { lines: unknown[] }) => [
    invoice.total_tax,
    invoice.total,
    invoice.reverse_charge,
    invoice.lines.length,
    invoice.total_tax_amounts,
  ];
  assert.deepEqual(summary(await invoiceOf('reverse')), [0, 4900, true, 1, []]);
  assert.deepEqual(summary(await invoiceOf('exempt')), [0, 4900, false, 1, []]);
  const taxed = await invoiceOf('none');
  assert.deepEqual(summary(taxed).slice(0, 4), [931, 5831, false, 2]);
  const detail = await app.request('GET', `/api/invoices/${taxed.id}`);
  assert.equal(detail.body.total_tax_amounts[0].amount, 931);
});
