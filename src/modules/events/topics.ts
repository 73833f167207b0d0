// Every event topic the service emits (SPEC §6). Webhook endpoints subscribe to these.
export const TOPICS = [
  'customer.created',
  'customer.updated',
  'customer.deleted',
  'subscription.created',
  'subscription.updated',
  'subscription.renewed',
  'subscription.past_due',
  'subscription.cancelled',
  'payment.succeeded',
  'payment.failed',
  'payment.refunded',
  'payment.refund_failed',
  'payment.merged',
  'invoice.created',
  'invoice.paid',
  'invoice.payment_failed',
  'invoice.voided',
  'invoice.marked_uncollectible',
  'dunning.started',
  'dunning.reminder',
  'dunning.recovered',
  'dunning.exhausted',
  'webhook_endpoint.disabled',
  'webhook.test',
] as const;

export type Topic = (typeof TOPICS)[number];
