// Row shapes of `payments`, `refunds` and `payment_references`. One payment per provider payment (unique on
// provider + provider_reference); one refund per provider refund. Written only by
// payments.recording.ts, from processed provider events.
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

/** `failed`: the refund failed or was cancelled (possibly after succeeding); it is final. */
export const REFUND_STATUSES = ['succeeded', 'failed'] as const;
export type RefundStatus = (typeof REFUND_STATUSES)[number];

export interface RefundsTable {
  id: string;
  payment_id: string;
  provider: string;
  /** The provider's id of the refund (Stripe `re_…`; Paystack refund reference). */
  provider_reference: string;
  /** Minor units, above 0. */
  amount: number;
  currency: string;
  status: RefundStatus;
  refunded_at: string;
  created_at: string;
  updated_at: string;
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
