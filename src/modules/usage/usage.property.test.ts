// Property (SPEC §15): whatever the stream — duplicates, retries of whole batches, events out
// of order, batches sent at once to two app instances over one database — a meter's value over
// any period equals its rule applied to the DISTINCT events (one per customer and
// transaction_id). Both databases: SQLite through a file both instances open. The events and
// the periods straddle minute, hour, day and month boundaries (the rollups are per minute,
// hour and day), and arrive in any order (late events land in buckets read before).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import fc from 'fast-check';
import { buildTestApp } from '../../../test/helpers/app.ts';
import { createCustomer } from '../../../test/helpers/factories.ts';
import type { MeterAggregation } from '../../db/tables/usage.table.ts';
import { aggregateUsage } from './usage.aggregate.ts';
import { addDecimals, canonicalDecimal, maxDecimal } from './usage.decimal.ts';
import { compareBytes } from './usage.store.ts';

const NOW = Date.parse('2026-02-01T02:00:00.000Z');
const HOUR_MS = 60 * 60_000;
const WINDOW_MS = 3 * 24 * HOUR_MS;
const WINDOW_START = NOW - WINDOW_MS;
/** Instants on and next to a month, day, hour and minute boundary inside the window. */
const MONTH = Date.parse('2026-02-01T00:00:00.000Z');
const DAY = Date.parse('2026-01-31T00:00:00.000Z');
const BOUNDARIES = [MONTH, DAY, MONTH + HOUR_MS, DAY - 7 * HOUR_MS, MONTH - 60_000].flatMap((b) => [b - 1, b, b + 1]);
const AGGREGATIONS: MeterAggregation[] = ['count', 'sum', 'max', 'last', 'unique_count'];

interface Event {
  customer: number;
  meter: number;
  transaction_id: string;
  at: number;
  amount: string;
  user: string;
}

// Few transaction ids and timestamps on few minutes: collisions and same-instant ties happen.
const eventArb = fc.record({
  customer: fc.integer({ min: 0, max: 1 }),
  meter: fc.integer({ min: 0, max: AGGREGATIONS.length - 1 }),
  transaction_id: fc.oneof(fc.constantFrom('a', 'b', 'é', '𝔘', 'B'), fc.string({ minLength: 1, maxLength: 4 })),
  at: fc.oneof(
    fc.integer({ min: WINDOW_START, max: NOW }),
    fc.integer({ min: NOW - 3 * HOUR_MS, max: NOW }),
    fc.constantFrom(NOW - 60_000, NOW - 120_000, NOW - 90_500, ...BOUNDARIES),
  ),
  amount: fc
    .tuple(fc.integer({ min: -1000, max: 100_000 }), fc.integer({ min: 0, max: 999 }))
    .map(([i, f]) => canonicalDecimal(`${i < 0 ? '-' : ''}${Math.abs(i)}.${String(f).padStart(3, '0')}`)),
  user: fc.constantFrom('u1', 'u2', 'u3', 'u4'),
});

/** A period's bound: anywhere in the window, or on or next to a boundary. */
const periodEnd = fc.oneof(fc.integer({ min: WINDOW_START, max: NOW }), fc.constantFrom(...BOUNDARIES));

/** The meter's rule over `events` (distinct already) with at in [from, to). */
function model(aggregation: MeterAggregation, events: Event[], from: number, to: number): string {
  const inside = events.filter((e) => e.at >= from && e.at < to);
  switch (aggregation) {
    case 'count':
      return String(inside.length);
    case 'sum':
      return addDecimals(inside.map((e) => e.amount));
    case 'max':
      return inside.reduce<string | null>((m, e) => maxDecimal(m, e.amount), null) ?? '0';
    case 'unique_count':
      return String(new Set(inside.map((e) => e.user)).size);
    case 'last': {
      const last = inside.toSorted((a, b) => b.at - a.at || compareBytes(b.transaction_id, a.transaction_id))[0];
      return last?.amount ?? '0';
    }
  }
}

test('property: values per period equal the rule over distinct events, across retries and two instances', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'usage-property-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const first = await buildTestApp(t, { sqliteFile: join(dir, 'db.sqlite') });
  const second = await buildTestApp(t, { sameDatabaseAs: first });
  first.clock.set(new Date(NOW));
  let run = 0;
  await fc.assert(
    fc.asyncProperty(
      fc.array(eventArb, { minLength: 1, maxLength: 60 }),
      fc.array(fc.integer({ min: 1, max: 20 }), { minLength: 1, maxLength: 8 }),
      fc.array(fc.tuple(periodEnd, periodEnd), { minLength: 1, maxLength: 4 }),
      async (stream, cuts, periods) => {
        run += 1;
        const customers = [await createCustomer(first), await createCustomer(first, { external_id: `ext-${run}` })];
        const meters: { id: string; event_name: string }[] = [];
        for (const aggregation of AGGREGATIONS) {
          const res = await first.request('POST', '/api/meters', {
            body: {
              event_name: `${aggregation}-${run}`,
              aggregation,
              display_name: aggregation,
              ...(aggregation === 'unique_count' ? { unique_property: 'user' } : {}),
              ...(['sum', 'max', 'last'].includes(aggregation) ? { value_property: 'amount' } : {}),
            },
          });
          assert.equal(res.status, 201, res.text);
          meters.push(res.body);
        }
        // A retry carries the same event: the first of a key is the event, later ones copies of it.
        const byKey = new Map<string, Event>();
        for (const e of stream)
          byKey.set(`${e.customer}:${e.transaction_id}`, byKey.get(`${e.customer}:${e.transaction_id}`) ?? e);
        const sent = stream.map((e) => byKey.get(`${e.customer}:${e.transaction_id}`)!);
        const distinct = [...byKey.values()];
        const wire = (e: Event) => ({
          transaction_id: e.transaction_id,
          // The second customer by its external id half the time.
          customer_id: e.customer === 1 && e.at % 2 === 0 ? `ext-${run}` : customers[e.customer]!.id,
          event_name: meters[e.meter]!.event_name,
          timestamp: new Date(e.at).toISOString(),
          properties: { amount: e.amount, user: e.user },
        });
        // Cut the stream into batches; each batch goes to both instances at once (one a retry).
        const batches: Event[][] = [];
        let offset = 0;
        for (const size of cuts) {
          if (offset >= sent.length) break;
          batches.push(sent.slice(offset, offset + size));
          offset += size;
        }
        if (offset < sent.length) batches.push(sent.slice(offset));
        for (const batch of batches) {
          const body = { events: batch.map(wire) };
          const answers = await Promise.all([
            first.request('POST', '/api/usage-events', { body }),
            second.request('POST', '/api/usage-events', { body }),
          ]);
          for (const a of answers) {
            assert.equal(a.status, 202, a.text);
            assert.equal(a.body.rejected, 0, a.text);
          }
          // Of the two copies of each event, exactly one is accepted at most.
          const accepted = answers[0].body.accepted + answers[1].body.accepted;
          assert.ok(accepted <= batch.length);
        }
        for (const [a, b] of periods) {
          const from = Math.min(a, b);
          const to = Math.max(a, b) + 1;
          for (const [c, customer] of customers.entries()) {
            for (const [m, meter] of meters.entries()) {
              const expected = model(
                AGGREGATIONS[m]!,
                distinct.filter((e) => e.customer === c && e.meter === m),
                from,
                to,
              );
              const value = await aggregateUsage(second.deps.db, {
                customer_id: customer.id,
                meter_id: meter.id,
                from: new Date(from).toISOString(),
                to: new Date(to).toISOString(),
              });
              assert.equal(value, expected, `${AGGREGATIONS[m]} customer ${c} [${from}, ${to})`);
            }
          }
        }
      },
    ),
    { numRuns: 12 },
  );
});
