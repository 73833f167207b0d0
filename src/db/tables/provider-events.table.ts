// Row shapes of the inbox (`provider_events`) and of the provider subscription references
// learnt from events (SPEC §5).
import type { Selectable } from 'kysely';

/**
 * The moves between them: inbox/inbox.status.ts. `received`: committed, not processed yet. `processed`: its effects are applied.
 * `ignored`: a type we do not handle. `held`: a refund waiting for its payment
 * (`held_reference`). `failed`: see `error`; retried at `next_attempt_at` unless null.
 */
export type InboxStatus = 'received' | 'processed' | 'ignored' | 'held' | 'failed';

export interface ProviderEventsTable {
  id: string;
  provider: string;
  /** Unique per provider: Stripe `event.id`; Paystack type + the object's id (see the adapter). */
  event_key: string;
  event_type: string;
  /** The verified request body, exactly as received (UTF-8). */
  payload: string;
  status: InboxStatus;
  error: string | null;
  /** Processing attempts so far. */
  attempts: number;
  received_at: string;
  processed_at: string | null;
  /**
   * When the worker may (re)process the row; null when nothing is due. One "due at" for three
   * waits: the request's lease on a `received` row, a `failed` row's retry time, a claimed
   * row's lease (src/modules/README.md says why it stays one column).
   */
  next_attempt_at: string | null;
  /** For `held` refunds: the provider reference of the payment they wait for. */
  held_reference: string | null;
}

export type ProviderEventRow = Selectable<ProviderEventsTable>;

export interface ProviderSubscriptionReferencesTable {
  provider: string;
  /** The provider's subscription id (Paystack `SUB_…`, Stripe `sub_…`). */
  reference: string;
  subscription_id: string;
  created_at: string;
}
