import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  isEntitled,
  isLive,
  LIFECYCLE_EVENTS,
  type LifecycleEvent,
  nextStatus,
  SUBSCRIPTION_STATUSES,
  type SubscriptionStatus,
  type Transition,
} from './subscriptions.status.ts';

// The state machine of SPEC §4, written out by hand: every allowed (status, event) pair with
// its next status and topic. Every pair not listed here must be forbidden.
const cancelled: Transition = { to: 'cancelled', topic: 'subscription.cancelled' };
const EXPECTED: Record<SubscriptionStatus, Partial<Record<LifecycleEvent, Transition>>> = {
  incomplete: {
    payment_succeeded: { to: 'active', topic: 'subscription.updated' },
    incomplete_expired: { to: 'incomplete_expired', topic: 'subscription.updated' },
    cancel: cancelled,
  },
  trialing: {
    payment_succeeded: { to: 'active', topic: 'subscription.renewed' },
    payment_failed: { to: 'past_due', topic: 'subscription.past_due' },
    renewal_unpaid: { to: 'past_due', topic: 'subscription.past_due' },
    cancel: cancelled,
    schedule_cancel: { to: 'trialing', topic: 'subscription.updated' },
    unschedule_cancel: { to: 'trialing', topic: 'subscription.updated' },
    period_end_cancel: cancelled,
  },
  active: {
    payment_succeeded: { to: 'active', topic: 'subscription.renewed' },
    payment_failed: { to: 'past_due', topic: 'subscription.past_due' },
    renewal_unpaid: { to: 'past_due', topic: 'subscription.past_due' },
    pause: { to: 'paused', topic: 'subscription.updated' },
    cancel: cancelled,
    schedule_cancel: { to: 'active', topic: 'subscription.updated' },
    unschedule_cancel: { to: 'active', topic: 'subscription.updated' },
    period_end_cancel: cancelled,
  },
  past_due: {
    payment_succeeded: { to: 'active', topic: 'subscription.renewed' },
    dunning_exhausted_cancel: cancelled,
    dunning_exhausted_unpaid: { to: 'unpaid', topic: 'subscription.updated' },
    cancel: cancelled,
  },
  unpaid: {
    payment_succeeded: { to: 'active', topic: 'subscription.renewed' },
    cancel: cancelled,
  },
  paused: {
    resume: { to: 'active', topic: 'subscription.updated' },
    cancel: cancelled,
  },
  cancelled: {},
  incomplete_expired: {},
};

test('the status and event lists are exactly those of SPEC §4', () => {
  assert.deepEqual(
    [...SUBSCRIPTION_STATUSES].sort(),
    Object.keys(EXPECTED).sort(),
    'a new status needs its row in the expected matrix',
  );
  assert.equal(LIFECYCLE_EVENTS.length, 12);
});

for (const status of SUBSCRIPTION_STATUSES) {
  for (const event of LIFECYCLE_EVENTS) {
    const expected = EXPECTED[status][event];
    const name = expected
      ? `${event} moves a ${status} subscription to ${expected.to} with ${expected.topic}`
      : `${event} is forbidden for a ${status} subscription`;
    test(name, () => {
      assert.deepEqual(nextStatus(status, event), expected);
    });
  }
}

test('cancelled and incomplete_expired are terminal: no event leaves them', () => {
  for (const status of ['cancelled', 'incomplete_expired'] as const) {
    for (const event of LIFECYCLE_EVENTS) assert.equal(nextStatus(status, event), undefined, event);
  }
});

test('every non-terminal status can be cancelled at once', () => {
  for (const status of SUBSCRIPTION_STATUSES) {
    const terminal = status === 'cancelled' || status === 'incomplete_expired';
    assert.equal(nextStatus(status, 'cancel')?.to, terminal ? undefined : 'cancelled', status);
  }
});

test('entitled is true for trialing, active and past_due only', () => {
  const expected: Record<SubscriptionStatus, boolean> = {
    incomplete: false,
    incomplete_expired: false,
    trialing: true,
    active: true,
    past_due: true,
    unpaid: false,
    paused: false,
    cancelled: false,
  };
  for (const status of SUBSCRIPTION_STATUSES) assert.equal(isEntitled(status), expected[status], status);
});

test('every status but cancelled and incomplete_expired is live (blocks customer deletion)', () => {
  for (const status of SUBSCRIPTION_STATUSES) {
    assert.equal(isLive(status), status !== 'cancelled' && status !== 'incomplete_expired', status);
  }
});
