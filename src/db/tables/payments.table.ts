// Row shapes of `payments`, `refunds` and `payment_references`. One payment per provider payment (unique on
// provider + provider_reference); one refund per provider refund. Written only by
// payments.recording.ts (from processed provider events) and payments.refund-requests.ts
// (refunds started through the API, SPEC §10).
import type { ColumnType, Selectable } from 'kysely';

export const PAYMENT_STATUSES = ['succeeded', 'failed', 'refunded', 'partially_refunded'] as const;
export type PaymentStatus = (typeof PAYMENT_STATUSES)[number];

/** The provider of payments recorded by POST /api/invoices/{id}/pay (cash, bank transfer; SPEC §9). */
export const MANUAL_PROVIDER = 'manual';

export interface PaymentsTable {
  id: string;
  customer_id: string | null;
  subscription_id: string | null;
  provider: string;
  /** The provider's id of the payment (Paystack transaction reference, Stripe PaymentIntent id). */
  provider_reference: string;
  /** Minor units. */
  amount: number;
  /** Minor units: the sum of the payment's succeeded refunds, never above `amount`. */
  amount_refunded: number;
  /** ISO 4217, upper case. */
  currency: string;
  status: PaymentStatus;
  failure_reason: string | null;
  paid_at: string | null;
  created_at: string;
  updated_at: string;
  /** The invoice (`inv_…`) this payment settled (SPEC §9); null when it settled none. */
  invoice_id: ColumnType<string | null, string | null | undefined, string | null>;
}

export type PaymentRow = Selectable<PaymentsTable>;

/**
 * `pending`: requested through the API (SPEC §10), not settled by the provider's event yet; it
 * counts against what may still be refunded but not in `amount_refunded`. `failed`: the refund
 * failed, was cancelled (possibly after succeeding) or the provider refused the request; final.
 */
export const REFUND_STATUSES = ['pending', 'succeeded', 'failed'] as const;
export type RefundStatus = (typeof REFUND_STATUSES)[number];

export interface RefundsTable {
  id: string;
  payment_id: string;
  provider: string;
  /**
   * The provider's id of the refund as its events name it (Stripe `re_…`; Paystack refund
   * reference). A refund requested through the API carries its create call's id, or — while no
   * usable answer came — our own id (`re_…`), until an event names it.
   */
  provider_reference: string;
  /** Minor units, above 0. */
  amount: number;
  currency: string;
  status: RefundStatus;
  /** When the money went back (the provider's time); null while `pending` or when refused. */
  refunded_at: ColumnType<string | null, string | null | undefined, string | null>;
  created_at: string;
  updated_at: string;
  /** API refunds: the client's reason; null otherwise. */
  reason: ColumnType<string | null, string | null | undefined, string | null>;
  /** API refunds: the id the provider's create call returned; null until a usable answer came. */
  provider_refund_id: ColumnType<string | null, string | null | undefined, string | null>;
  /** API refunds sent with an Idempotency-Key: hex SHA-256 of (API key, key, request); unique. */
  request_key: ColumnType<string | null, string | null | undefined, string | null>;
  /** Why the provider refused the request (the refund is then `failed`). */
  failure_reason: ColumnType<string | null, string | null | undefined, string | null>;
  /** API refunds: the lease (ISO 8601) of whoever is calling the provider for it; null when nobody is. */
  claimed_until: ColumnType<string | null, string | null | undefined, string | null>;
  /** API refunds without a usable answer: when the worker asks the provider again (ISO 8601). */
  resume_at: ColumnType<string | null, string | null | undefined, string | null>;
  /** The test clock of the payment's customer when the refund was made (SPEC §11); null: real time. */
  test_clock_id: ColumnType<string | null, string | null | undefined, string | null>;
}

export type RefundRow = Selectable<RefundsTable>;

/**
 * Another provider id of a payment (SPEC §5): reports naming `reference` are recorded on the
 * payment keyed `canonical_reference` (Stripe: invoice `in_…` → its PaymentIntent `pi_…`).
 */
export interface PaymentReferencesTable {
  provider: string;
  /** The alias, e.g. a Stripe invoice id. Never itself a canonical reference of another alias. */
  reference: string;
  /** The payment's `provider_reference`, e.g. a Stripe PaymentIntent id. */
  canonical_reference: string;
  created_at: string;
}
