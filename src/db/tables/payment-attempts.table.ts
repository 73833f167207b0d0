// Row shape of `invoice_payment_attempts` (SPEC §10): one row per request the service made to a
// provider to collect an invoice, committed before the call. Owned by payment-attempts.ts.
import type { Selectable } from 'kysely';
import type { ProviderName } from '../../shared/provider-names.ts';

/**
 * - `pending`: committed, the provider call not answered yet.
 * - `unknown`: the call ended without a usable answer (timeout, 5xx, connection lost); what
 *   the provider did must be asked (`GET /transaction/verify/:reference`, or the Stripe call
 *   repeated with the same Idempotency-Key) before anything is tried again.
 * - `requires_action`: the provider waits for the customer (a checkout link was issued).
 * - `succeeded` / `failed`: final.
 */
export const ATTEMPT_STATUSES = ['pending', 'unknown', 'requires_action', 'succeeded', 'failed'] as const;
export type AttemptStatus = (typeof ATTEMPT_STATUSES)[number];

/** `checkout`: a link the customer pays through; `charge`: a saved method charged by the worker. */
export const ATTEMPT_KINDS = ['checkout', 'charge'] as const;
export type AttemptKind = (typeof ATTEMPT_KINDS)[number];

export interface InvoicePaymentAttemptsTable {
  /** `pat_…` */
  id: string;
  invoice_id: string;
  provider: ProviderName;
  kind: AttemptKind;
  /**
   * Ours, unique: `pat-<ulid>` (Paystack allows only letters, digits, `-`, `.`, `=`). Paystack's
   * `reference`; Stripe's `client_reference_id` and the call's Idempotency-Key.
   */
  reference: string;
  status: AttemptStatus;
  /** Minor units: what was asked for (the invoice's amount_remaining at the time). */
  amount: number;
  /** ISO 4217, upper case. */
  currency: string;
  /** The provider's id of what it created: Paystack `access_code`, Stripe `cs_…` / `pi_…`. */
  provider_object_id: string | null;
  /** The checkout link the customer opens (checkout attempts that succeeded). */
  url: string | null;
  /** When the checkout link stops working (Stripe `expires_at`; Paystack does not say). */
  expires_at: string | null;
  /** Ours (`provider_timeout`, `provider_unavailable`, `provider_refused`) or the provider's code. */
  failure_code: string | null;
  failure_message: string | null;
  /** The saved method (`pm_…`) a `charge` attempt charges; null for checkout links. */
  payment_method_id: string | null;
  /**
   * The lease of an unresolved `charge` attempt (SPEC §10 "Exactly once"): until this time
   * (ISO 8601) only worker `locked_by` may call the provider for it. On a `pending` checkout
   * attempt of the Pay button (`locked_by` = `pay-button`): the press is calling the provider,
   * another press waits for its link. Null once resolved, and on the API's checkout attempts.
   */
  locked_until: string | null;
  locked_by: string | null;
  created_at: string;
  updated_at: string;
}

export type PaymentAttemptRow = Selectable<InvoicePaymentAttemptsTable>;
