import assert from 'node:assert/strict';
import { test } from 'node:test';
import { canMove, INBOX_TRANSITIONS, needsProcessing, RETRIED_STATUSES } from './inbox.status.ts';

const DUE = '2026-01-01T00:00:00.000Z';

test('processed and ignored are final', () => {
  for (const to of Object.keys(INBOX_TRANSITIONS) as (keyof typeof INBOX_TRANSITIONS)[]) {
    assert.equal(canMove('processed', to), false);
    assert.equal(canMove('ignored', to), false);
  }
});

test('a received, held or failed row can be processed, ignored, held or fail', () => {
  for (const from of ['received', 'held', 'failed'] as const) {
    for (const to of ['processed', 'ignored', 'held', 'failed'] as const) assert.equal(canMove(from, to), true);
  }
});

test('nothing moves back to received', () => {
  for (const from of Object.keys(INBOX_TRANSITIONS) as (keyof typeof INBOX_TRANSITIONS)[]) {
    assert.equal(canMove(from, 'received'), false);
  }
});

test('a failed row needs processing only while a retry is due', () => {
  assert.equal(needsProcessing({ status: 'failed', next_attempt_at: DUE }), true);
  assert.equal(needsProcessing({ status: 'failed', next_attempt_at: null }), false);
});

test('received and held rows need processing; processed and ignored rows do not', () => {
  assert.equal(needsProcessing({ status: 'received', next_attempt_at: DUE }), true);
  assert.equal(needsProcessing({ status: 'held', next_attempt_at: null }), true);
  assert.equal(needsProcessing({ status: 'processed', next_attempt_at: null }), false);
  assert.equal(needsProcessing({ status: 'ignored', next_attempt_at: null }), false);
});

test('the worker retries received and failed rows, never held ones', () => {
  assert.deepEqual([...RETRIED_STATUSES].sort(), ['failed', 'received']);
});
