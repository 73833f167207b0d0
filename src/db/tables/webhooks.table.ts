// Row shapes of the outbound-webhook tables (SPEC §6): endpoints, one delivery per
// (event, endpoint) with its lease, and every attempt of a delivery.
import type { Generated, Selectable } from 'kysely';

export const ENDPOINT_STATUSES = ['enabled', 'disabled'] as const;
export type EndpointStatus = (typeof ENDPOINT_STATUSES)[number];
/** Why an endpoint is disabled: by PATCH, by a `410 Gone`, or after 5 days of failures. */
export const DISABLED_REASONS = ['manual', 'gone', 'failing'] as const;
export type DisabledReason = (typeof DISABLED_REASONS)[number];
export const DELIVERY_STATUSES = ['pending', 'succeeded', 'failed'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

export interface WebhookEndpointsTable {
  id: string;
  url: string;
  /** JSON array of topics, or `["*"]`. */
  events: string;
  /** Signing secret; never leaves the service except as signatures. */
  secret: string | null;
  status: EndpointStatus;
  disabled_reason: DisabledReason | null;
  /** Time of the first failed attempt since the last success (null when the last one succeeded). */
  failing_since: string | null;
  created_at: string;
  updated_at: string;
}

export interface WebhookDeliveriesTable {
  id: string;
  endpoint_id: string;
  event_id: string;
  topic: string;
  status: DeliveryStatus;
  attempt_count: Generated<number>;
  /** When the next attempt is due (pending only). */
  next_attempt_at: string | null;
  /** Lease: the worker `locked_by` is sending it until `locked_until`. */
  locked_until: string | null;
  locked_by: string | null;
  last_attempt_at: string | null;
  /** Time of the first successful attempt; never cleared (a redelivery keeps it). */
  delivered_at: string | null;
  created_at: string;
  updated_at: string;
}

export interface WebhookAttemptsTable {
  delivery_id: string;
  /** 1, 2, … per delivery, in the order the outcomes were recorded. */
  number: number;
  attempted_at: string;
  duration_ms: number;
  status_code: number | null;
  /** The first ≤ 1 KiB of the response body (UTF-8). */
  response_body: string | null;
  error: string | null;
}

export type EndpointRow = Selectable<WebhookEndpointsTable>;
export type DeliveryRow = Selectable<WebhookDeliveriesTable>;
export type AttemptRow = Selectable<WebhookAttemptsTable>;
