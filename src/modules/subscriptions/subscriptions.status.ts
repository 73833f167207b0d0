// The subscription state machine (SPEC §4) as ONE table: state × event → next state and
// the event topic that records it. Every status change goes through `nextStatus`; no
// handler writes a status directly. Pure: no database, no clock.
import type { Topic } from '../events/events.topics.ts';
import { SUBSCRIPTION_STATUSES, type SubscriptionStatus } from '../../db/tables/subscriptions.table.ts';

export { SUBSCRIPTION_STATUSES, type SubscriptionStatus };

export const LIFECYCLE_EVENTS = [
  /** A successful payment for the subscription. */
  'payment_succeeded',
  /** A failed payment for the subscription. */
  'payment_failed',
  /** `SUBSCRIPTION_INCOMPLETE_TTL` passed without a first payment. */
  'incomplete_expired',
  /** `RENEWAL_GRACE` passed after the period (or trial) end without a payment. */
  'renewal_unpaid',
  /** PUT …/pause. */
  'pause',
  /** PUT …/resume of a paused subscription. */
  'resume',
  /** Immediate cancel (PUT …/cancel). */
  'cancel',
  /** PUT …/cancel with at_period_end: the subscription runs on, flagged. */
  'schedule_cancel',
  /** PUT …/resume undoing a pending period-end cancel. */
  'unschedule_cancel',
  /** The worker reached `current_period_end` of a flagged subscription. */
  'period_end_cancel',
  /** Dunning's last step passed unpaid, with DUNNING_FINAL_ACTION=cancel. */
  'dunning_exhausted_cancel',
  /** Dunning's last step passed unpaid, with DUNNING_FINAL_ACTION=unpaid. */
  'dunning_exhausted_unpaid',
] as const;
export type LifecycleEvent = (typeof LIFECYCLE_EVENTS)[number];

export interface Transition {
  to: SubscriptionStatus;
  topic: Topic;
}

const cancel: Transition = { to: 'cancelled', topic: 'subscription.cancelled' };

/** The whole state machine. A missing entry means the event is not allowed in that state. */
export const TRANSITIONS: Readonly<Record<SubscriptionStatus, Partial<Record<LifecycleEvent, Transition>>>> = {
  incomplete: {
    payment_succeeded: { to: 'active', topic: 'subscription.updated' },
    incomplete_expired: { to: 'incomplete_expired', topic: 'subscription.updated' },
    cancel,
  },
  trialing: {
    payment_succeeded: { to: 'active', topic: 'subscription.renewed' },
    payment_failed: { to: 'past_due', topic: 'subscription.past_due' },
    renewal_unpaid: { to: 'past_due', topic: 'subscription.past_due' },
    cancel,
    schedule_cancel: { to: 'trialing', topic: 'subscription.updated' },
    unschedule_cancel: { to: 'trialing', topic: 'subscription.updated' },
    period_end_cancel: cancel,
  },
  active: {
    payment_succeeded: { to: 'active', topic: 'subscription.renewed' },
    payment_failed: { to: 'past_due', topic: 'subscription.past_due' },
    renewal_unpaid: { to: 'past_due', topic: 'subscription.past_due' },
    pause: { to: 'paused', topic: 'subscription.updated' },
    cancel,
    schedule_cancel: { to: 'active', topic: 'subscription.updated' },
    unschedule_cancel: { to: 'active', topic: 'subscription.updated' },
    period_end_cancel: cancel,
  },
  past_due: {
    payment_succeeded: { to: 'active', topic: 'subscription.renewed' },
    dunning_exhausted_cancel: cancel,
    dunning_exhausted_unpaid: { to: 'unpaid', topic: 'subscription.updated' },
    cancel,
  },
  unpaid: {
    payment_succeeded: { to: 'active', topic: 'subscription.renewed' },
    cancel,
  },
  paused: {
    resume: { to: 'active', topic: 'subscription.updated' },
    cancel,
  },
  cancelled: {},
  incomplete_expired: {},
};

/** The transition for `event` in `status`, or undefined when the table forbids it. */
export function nextStatus(status: SubscriptionStatus, event: LifecycleEvent): Transition | undefined {
  return TRANSITIONS[status][event];
}

/** `entitled` (SPEC §4): may this customer use the product now? */
export function isEntitled(status: SubscriptionStatus): boolean {
  return status === 'trialing' || status === 'active' || status === 'past_due';
}

/** States that still bind the customer (a customer with one cannot be deleted). */
export function isLive(status: SubscriptionStatus): boolean {
  return status !== 'cancelled' && status !== 'incomplete_expired';
}
