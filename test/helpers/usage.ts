// Usage events for tests of usage billing (SPEC §15): ingested through the service, each with
// a fresh transaction_id, and every one accepted.
import assert from 'node:assert/strict';
import type { TestApp } from './app.ts';
import { ingestUsageEvents } from '../../src/modules/usage/usage.ingest.ts';

let transaction = 0;

/**
 * Ingests `count` events `event` (default `api_call`) of `customerId` at `at` (ms; the app's
 * clock must be within 5 minutes after it and at most 35 days later); fails the test unless
 * every one is accepted.
 */
export async function ingestCalls(app: TestApp, customerId: string, at: number, count: number, event = 'api_call') {
  const events = Array.from({ length: count }, () => ({
    transaction_id: `t-${process.pid}-${(transaction += 1)}`,
    customer_id: customerId,
    event_name: event,
    timestamp: new Date(at).toISOString(),
    properties: {},
  }));
  const results = await ingestUsageEvents(app.deps.db, app.deps.clock, events);
  assert.ok(
    results.every((r) => r.status === 'accepted'),
    JSON.stringify(results),
  );
}
