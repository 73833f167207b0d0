// Row shape of `events`, the transactional outbox: one row per state change, written in
// the same transaction as the change (SPEC §6). Webhook fan-out reads from here.
import type { Generated, Selectable } from 'kysely';

export interface EventsTable {
  id: string;
  topic: string;
  /** JSON text: the resource as the API returns it. */
  data: string;
  /** The event's time: a test clock's time for a clock customer's events (SPEC §11). */
  created_at: string;
  /**
   * When the row was written, in real time (SPEC §6: an endpoint receives the events written
   * after its creation); null on rows older than the column, whose `created_at` was real.
   */
  emitted_at: string | null;
  /**
   * JSON `{type: 'console_session', id}`: the operator console session whose action caused the
   * event (SPEC §16); null for the API, providers and the worker.
   */
  actor: string | null;
  /**
   * The customer (`cus_…`) the event is about, from its payload when written
   * (modules/events/events.customer.ts); null for events about no customer, and for events
   * older than migration 0040's bounded backfill. Indexed with created_at for a customer's page.
   */
  customer_id: string | null;
  /** Set once every delivery the event fanned out to has succeeded (or none was due). */
  delivered_at: string | null;
  /** Set when webhook fan-out wrote this event's deliveries (once, in one transaction). */
  fanned_out_at: string | null;
  /** Deliveries of this event that have not succeeded yet; `delivered_at` is set when it reaches 0. */
  pending_deliveries: Generated<number>;
}

export type EventRow = Selectable<EventsTable>;
