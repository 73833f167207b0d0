// The pricing models of SPEC §15, pure: worked examples to the minor unit (graduated, volume,
// package, free units, decimal prices rounded once per line, distinct users, peak seats), the
// usage step's lines and adjustments, the refusals, and properties over random tiers and
// quantities: graduated = the sum of each unit's tier price, volume = every unit at the tier
// reached, package = ⌈units / size⌉ packages.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { AmountOutOfRangeError, ComposeInputError } from './errors.ts';
import { periodInvoiceInput } from './input.ts';
import { composeInvoice } from './pipeline.ts';
import { type ChargePrice, parseQuantity, piecesTotal, priceUsage, type PriceTier } from './pricing.ts';
import type { ComposeInput, ComposeUsage } from './types.ts';
import { priceProblem } from '../../modules/plans/plans.charges.ts';
import { majorUnits, usage } from './usage.ts';

const START = '2026-01-15T10:00:00.000Z';
const END = '2026-02-15T10:00:00.000Z';

/** 0–1,000 free, 1,001–10,000 at `mid`, above at `top` (minor units per unit). */
function apiTiers(mid: string, top: string): PriceTier[] {
  return [
    { up_to: 1000, unit_amount_decimal: '0', flat_amount: 0 },
    { up_to: 10000, unit_amount_decimal: mid, flat_amount: 0 },
    { up_to: null, unit_amount_decimal: top, flat_amount: 0 },
  ];
}

function price(overrides: Partial<ChargePrice>): ChargePrice {
  return { model: 'standard', unit_amount_decimal: null, tiers: null, package_size: null, free_units: 0, ...overrides };
}

function item(p: ChargePrice, quantity: string, billed: ComposeUsage['billed'] = null): ComposeUsage {
  return {
    charge: { meter_id: 'meter_api', name: 'API calls', price: p },
    period_start: '2025-12-15T10:00:00.000Z',
    period_end: START,
    quantity,
    billed,
  };
}

function renewal(usageItems: ComposeUsage[]): ComposeInput {
  return {
    ...periodInvoiceInput({
      reason: 'renewal',
      customerId: 'cus_1',
      subscriptionId: 'sub_1',
      plan: { id: 'plan_1', name: 'Pro', amount: 5000, currency: 'USD' },
      periodStart: START,
      periodEnd: END,
    }),
    usage: usageItems,
  };
}

test('graduated, 12,345 units over 0–1,000 at 0, 1,001–10,000 at 40, above at 25: one line per tier, 418,625', () => {
  const graduated = price({ model: 'graduated', tiers: apiTiers('40', '25') });
  const lines = usage([], renewal([item(graduated, '12345')]));
  assert.deepEqual(
    lines.map((l) => [l.kind, l.description, l.quantity, l.unit_amount, l.amount, l.meter_id]),
    [
      ['usage', 'API calls, Tier 1: 1 – 1,000 × 0.00', 1000, 0, 0, 'meter_api'],
      ['usage', 'API calls, Tier 2: 1,001 – 10,000 × 0.40', 9000, 40, 360000, 'meter_api'],
      ['usage', 'API calls, Tier 3: 10,001 and above × 0.25', 2345, 25, 58625, 'meter_api'],
    ],
  );
  // The usage of the period just ended, on the invoice of the next one.
  assert.ok(lines.every((l) => l.period_start === '2025-12-15T10:00:00.000Z' && l.period_end === START));
  const invoice = composeInvoice(renewal([item(graduated, '12345')]));
  assert.equal(invoice.subtotal, 5000 + 418625);
});

test('graduated at fractions of a minor unit (0.40, 0.25): each tier rounded once, half away from zero', () => {
  const graduated = price({ model: 'graduated', tiers: apiTiers('0.40', '0.25') });
  const pieces = priceUsage(graduated, '12345');
  // 9,000 × 0.40 = 3,600; 2,345 × 0.25 = 586.25 → 586.
  assert.deepEqual(
    pieces.map((p) => p.amount),
    [0, 3600, 586],
  );
  assert.equal(
    usage([], renewal([item(graduated, '12345')]))[1]?.description,
    'API calls, Tier 2: 1,001 – 10,000 × 0.004',
  );
  // 2,347 × 0.25 = 586.75 → 587; 2,346 × 0.25 = 586.5 → 587 (half away from zero).
  assert.equal(piecesTotal(priceUsage(graduated, '12347')), 3600 + 587);
  assert.equal(piecesTotal(priceUsage(graduated, '12346')), 3600 + 587);
  // Exactly on a bound: 10,000 units touch two tiers, not three.
  assert.deepEqual(
    priceUsage(graduated, '10000').map((p) => p.amount),
    [0, 3600],
  );
});

test('volume: every unit at the price of the tier reached; a flat amount once', () => {
  const volume = price({ model: 'volume', tiers: apiTiers('40', '25') });
  assert.equal(piecesTotal(priceUsage(volume, '12345')), 12345 * 25);
  assert.equal(piecesTotal(priceUsage(volume, '5000')), 5000 * 40);
  assert.equal(piecesTotal(priceUsage(volume, '1000')), 0);
  const lines = usage([], renewal([item(volume, '12345')]));
  assert.deepEqual(
    lines.map((l) => [l.description, l.quantity, l.amount]),
    [['API calls, Tier 3: 10,001 and above × 0.25', 12345, 308625]],
  );
  const flat = price({
    model: 'volume',
    tiers: [
      { up_to: 10, unit_amount_decimal: '0', flat_amount: 2000 },
      { up_to: null, unit_amount_decimal: '150', flat_amount: 1000 },
    ],
  });
  assert.equal(piecesTotal(priceUsage(flat, '7')), 2000);
  const [line] = usage([], renewal([item(flat, '11')]));
  assert.equal(line?.amount, 11 * 150 + 1000);
  assert.equal(line?.description, 'API calls, Tier 2: 11 and above × 1.50 + 10.00 flat');
  assert.equal(line?.unit_amount, null, 'a flat amount makes the line more than quantity × unit price');
});

test('package of 1,000 at 500: 2,001 units are 3 packages (rounded up), 2,000 are 2', () => {
  const pack = price({ model: 'package', unit_amount_decimal: '500', package_size: 1000 });
  const lines = usage([], renewal([item(pack, '2001')]));
  assert.deepEqual(
    lines.map((l) => [l.description, l.quantity, l.unit_amount, l.amount]),
    [['API calls: packages of 1,000 × 5.00', 3, 500, 1500]],
  );
  assert.equal(piecesTotal(priceUsage(pack, '2000')), 1000);
  assert.equal(piecesTotal(priceUsage(pack, '1')), 500);
  assert.equal(piecesTotal(priceUsage(pack, '0.000000000001')), 500);
});

test('free units come off first; nothing left to bill makes no line', () => {
  const standard = price({ unit_amount_decimal: '2', free_units: 100 });
  const lines = usage([], renewal([item(standard, '150')]));
  assert.deepEqual(
    lines.map((l) => [l.description, l.quantity, l.amount]),
    [['API calls × 0.02, after 100 free', 50, 100]],
  );
  assert.deepEqual(usage([], renewal([item(standard, '100')])), []);
  assert.deepEqual(usage([], renewal([item(standard, '0')])), []);
  const graduated = price({ model: 'graduated', tiers: apiTiers('40', '25'), free_units: 345 });
  assert.equal(piecesTotal(priceUsage(graduated, '12345')), 9000 * 40 + 2000 * 25);
});

test('distinct users and peak seats: the meter aggregates, the model prices the aggregate', () => {
  // unique_count: 3 distinct users in the period, whatever their event count, at 1,000 each.
  const users = ['ana', 'bo', 'ana', 'chen', 'bo', 'ana'];
  const perUser = price({ unit_amount_decimal: '1000' });
  assert.equal(piecesTotal(priceUsage(perUser, String(new Set(users).size))), 3000);
  // max: the peak of 4, 9, 7 seats, by volume (1–5 at 800, above at 600): 9 × 600.
  const seats = price({
    model: 'volume',
    tiers: [
      { up_to: 5, unit_amount_decimal: '800', flat_amount: 0 },
      { up_to: null, unit_amount_decimal: '600', flat_amount: 0 },
    ],
  });
  assert.equal(piecesTotal(priceUsage(seats, String(Math.max(4, 9, 7)))), 5400);
});

test('decimal prices and quantities: rounded once per line, half away from zero; fractional units in the description', () => {
  const tiny = price({ unit_amount_decimal: '0.005' });
  assert.equal(piecesTotal(priceUsage(tiny, '101')), 1); // 0.505
  assert.equal(piecesTotal(priceUsage(tiny, '100')), 1); // 0.5
  assert.equal(piecesTotal(priceUsage(tiny, '99')), 0); // 0.495
  const perGb = price({ unit_amount_decimal: '10' });
  const [line] = usage([], renewal([item(perGb, '12.5')]));
  assert.deepEqual(
    [line?.description, line?.quantity, line?.unit_amount, line?.amount],
    ['API calls × 0.10 (12.5 units)', 1, null, 125],
  );
  // The smallest price and quantity a price holds: 12 decimals each.
  assert.equal(piecesTotal(priceUsage(price({ unit_amount_decimal: '0.000000000001' }), '1000000000000')), 1);
  // An aggregate of measured values may carry more than 12 decimals: rounded to 12.
  assert.equal(parseQuantity('0.30000000000000004'), 300_000_000_000n);
  assert.equal(parseQuantity('0.0000000000005'), 1n);
});

test('late usage of a period billed before: one adjustment line of the difference, naming the period', () => {
  const graduated = price({ model: 'graduated', tiers: apiTiers('40', '25') });
  const billed = { quantity: '12345', amount: 418625 };
  const lines = usage([], renewal([item(graduated, '12400', billed)]));
  assert.deepEqual(
    lines.map((l) => [l.kind, l.description, l.amount, l.period_start, l.meter_id]),
    [
      [
        'adjustment',
        'API calls, late usage of 15 Dec 2025 – 15 Jan 2026: 12,345 → 12,400 units',
        55 * 25,
        '2025-12-15T10:00:00.000Z',
        'meter_api',
      ],
    ],
  );
  // Late events that change nothing billed (inside a free tier) make no line.
  assert.deepEqual(usage([], renewal([item(graduated, '900', { quantity: '800', amount: 0 })])), []);
  // A late event that crosses a package bound bills one more package.
  const pack = price({ model: 'package', unit_amount_decimal: '500', package_size: 1000 });
  assert.equal(usage([], renewal([item(pack, '2001', { quantity: '2000', amount: 1000 })]))[0]?.amount, 500);
});

test('refusals: malformed prices and quantities, amounts beyond the safe range', () => {
  const standard = price({ unit_amount_decimal: '1000' });
  for (const bad of ['-1', '1e3', '', ' 1', '1.', '.5', '01', 'NaN', '١٢', '1\u0000', 'Infinity']) {
    assert.throws(() => priceUsage(standard, bad), ComposeInputError, bad);
  }
  assert.throws(() => priceUsage(standard, '9007199254740993'), AmountOutOfRangeError);
  assert.throws(() => priceUsage(price({ unit_amount_decimal: '0.0000000000001' }), '1'), ComposeInputError);
  assert.throws(() => priceUsage(price({ model: 'graduated' }), '1'), ComposeInputError);
  assert.throws(() => priceUsage(price({ model: 'package', unit_amount_decimal: '1' }), '1'), ComposeInputError);
});

test('priceProblem: what plan creation refuses', () => {
  const ok: ChargePrice[] = [
    price({ unit_amount_decimal: '0.40' }),
    price({ model: 'graduated', tiers: apiTiers('40', '25') }),
    price({ model: 'volume', tiers: [{ up_to: null, unit_amount_decimal: '3', flat_amount: 0 }] }),
    price({ model: 'package', unit_amount_decimal: '500', package_size: 1000, free_units: 10 }),
  ];
  for (const p of ok) assert.equal(priceProblem(p), null);
  const bad: [ChargePrice, RegExp][] = [
    [price({}), /needs unit_amount/],
    [price({ unit_amount_decimal: '1.0000000000001' }), /more than 12 decimals/],
    [price({ unit_amount_decimal: '-1' }), /not a non-negative decimal/],
    [price({ unit_amount_decimal: '1', free_units: -1 }), /free_units/],
    [price({ unit_amount_decimal: '1', package_size: 5 }), /package_size belongs/],
    [price({ model: 'package', unit_amount_decimal: '1' }), /package_size ≥ 1/],
    [price({ model: 'package', unit_amount_decimal: '1', package_size: 0 }), /package_size ≥ 1/],
    [price({ model: 'graduated', tiers: [] }), /needs tiers/],
    [price({ model: 'graduated', unit_amount_decimal: '1', tiers: apiTiers('1', '1') }), /priced by its tiers/],
    [
      price({ model: 'graduated', tiers: [{ up_to: 10, unit_amount_decimal: '1', flat_amount: 0 }] }),
      /last has up_to null/,
    ],
    [
      price({
        model: 'volume',
        tiers: [
          { up_to: null, unit_amount_decimal: '1', flat_amount: 0 },
          { up_to: null, unit_amount_decimal: '1', flat_amount: 0 },
        ],
      }),
      /last has up_to null/,
    ],
    [
      price({
        model: 'graduated',
        tiers: [
          { up_to: 10, unit_amount_decimal: '1', flat_amount: 0 },
          { up_to: 10, unit_amount_decimal: '1', flat_amount: 0 },
          { up_to: null, unit_amount_decimal: '1', flat_amount: 0 },
        ],
      }),
      /ascend/,
    ],
    [price({ model: 'graduated', tiers: [{ up_to: null, unit_amount_decimal: '1', flat_amount: -5 }] }), /flat_amount/],
  ];
  for (const [p, message] of bad) assert.match(priceProblem(p) ?? 'accepted', message);
});

/** Random tiers: ascending bounds up to ~2,000 units, integer prices and flat amounts. */
const tiersArb = fc
  .array(
    fc.tuple(fc.integer({ min: 1, max: 400 }), fc.integer({ min: 0, max: 1000 }), fc.integer({ min: 0, max: 500 })),
    {
      minLength: 1,
      maxLength: 5,
    },
  )
  .map((steps) => {
    let bound = 0;
    return steps.map(([width, unit, flat], index): PriceTier => {
      bound += width;
      return { up_to: index === steps.length - 1 ? null : bound, unit_amount_decimal: String(unit), flat_amount: flat };
    });
  });

/** The price of the `unit`-th unit (from 1) and the tier it falls in. */
function tierOf(tiers: readonly PriceTier[], unit: number): number {
  const index = tiers.findIndex((t) => t.up_to === null || unit <= t.up_to);
  return index;
}

test('property: graduated total = the sum over units of their tier price, + the flat amount of each tier touched', () => {
  fc.assert(
    fc.property(tiersArb, fc.integer({ min: 0, max: 2500 }), (tiers, quantity) => {
      const pieces = priceUsage(price({ model: 'graduated', tiers }), String(quantity));
      let expected = 0;
      const touched = new Set<number>();
      for (let unit = 1; unit <= quantity; unit++) {
        const index = tierOf(tiers, unit);
        expected += Number(tiers[index]?.unit_amount_decimal);
        touched.add(index);
      }
      for (const index of touched) expected += tiers[index]?.flat_amount ?? 0;
      assert.equal(piecesTotal(pieces), expected);
      assert.equal(pieces.length, touched.size);
      assert.equal(
        pieces.reduce((sum, p) => sum + p.quantity, 0n),
        BigInt(quantity) * 10n ** 12n,
      );
    }),
  );
});

test('property: volume = every unit at the tier reached, + its flat amount; monotone inside a tier', () => {
  fc.assert(
    fc.property(tiersArb, fc.integer({ min: 1, max: 2500 }), fc.integer({ min: 0, max: 2500 }), (tiers, a, b) => {
      const volume = price({ model: 'volume', tiers });
      const tier = tiers[tierOf(tiers, a)];
      assert.equal(
        piecesTotal(priceUsage(volume, String(a))),
        a * Number(tier?.unit_amount_decimal) + (tier?.flat_amount ?? 0),
      );
      // Across a bound the total may fall (a cheaper tier for every unit): monotone only inside one.
      const [low, high] = a <= b ? [a, b] : [b, a];
      if (low >= 1 && tierOf(tiers, low) === tierOf(tiers, high)) {
        assert.ok(piecesTotal(priceUsage(volume, String(low))) <= piecesTotal(priceUsage(volume, String(high))));
      }
    }),
  );
});

test('property: package = ⌈(units − free) / size⌉ × price, for whole and fractional units', () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 0, max: 1_000_000 }),
      fc.integer({ min: 0, max: 999 }),
      fc.integer({ min: 1, max: 5000 }),
      fc.integer({ min: 0, max: 100_000 }),
      fc.integer({ min: 0, max: 1000 }),
      (whole, thousandths, size, unit, free) => {
        const quantity = `${whole}.${String(thousandths).padStart(3, '0')}`;
        const pack = price({
          model: 'package',
          unit_amount_decimal: String(unit),
          package_size: size,
          free_units: free,
        });
        const billable = whole * 1000 + thousandths - free * 1000;
        const packages = billable <= 0 ? 0 : Math.ceil(billable / (size * 1000));
        assert.equal(piecesTotal(priceUsage(pack, quantity)), packages * unit);
      },
    ),
  );
});

test('property: decimal graduated prices stay within half a minor unit per line of the exact price', () => {
  const decimal = fc.integer({ min: 0, max: 10 ** 6 }).map((n) => (n / 1000).toFixed(3));
  fc.assert(
    fc.property(
      tiersArb,
      fc.array(decimal, { minLength: 5, maxLength: 5 }),
      fc.integer({ min: 0, max: 2500 }),
      (tiers, prices, q) => {
        const priced = tiers.map((t, i) => ({ ...t, unit_amount_decimal: prices[i] ?? '0', flat_amount: 0 }));
        const pieces = priceUsage(price({ model: 'graduated', tiers: priced }), String(q));
        // Exact in thousandths of a minor unit.
        let exact = 0n;
        for (let unit = 1; unit <= q; unit++) {
          exact += BigInt(Math.round(Number(priced[tierOf(priced, unit)]?.unit_amount_decimal) * 1000));
        }
        const total = BigInt(piecesTotal(pieces)) * 1000n;
        const diff = total > exact ? total - exact : exact - total;
        assert.ok(diff * 2n <= 1000n * BigInt(pieces.length), `${total} vs ${exact}`);
      },
    ),
  );
});

test("usage prices read in the currency's major unit, exactly: its own decimals, never rounded", () => {
  assert.equal(majorUnits('40', 'USD'), '0.40');
  assert.equal(majorUnits('2.5', 'USD'), '0.025');
  assert.equal(majorUnits('125000', 'EUR'), '1,250.00');
  assert.equal(majorUnits('0', 'USD'), '0.00');
  assert.equal(majorUnits('500', 'JPY'), '500');
  assert.equal(majorUnits('0.5', 'JPY'), '0.5');
  assert.equal(majorUnits('1234', 'KWD'), '1.234');
  assert.equal(majorUnits('0.000000000001', 'EUR'), '0.00000000000001');
  assert.equal(majorUnits('9007199254740993', 'USD'), '90,071,992,547,409.93');
});
