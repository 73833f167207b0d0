// Row shape of `payment_methods` (SPEC §10): a customer's reusable card or account at a
// provider. Owned by payment-methods.ts; `credential` is ciphertext (shared/encryption.ts).
import type { Selectable } from 'kysely';
import type { ProviderName } from '../../shared/provider-names.ts';

/** `active`: can be charged; `detached`: removed (DELETE), kept for history, never charged. */
export const PAYMENT_METHOD_STATUSES = ['active', 'detached'] as const;
export type PaymentMethodStatus = (typeof PAYMENT_METHOD_STATUSES)[number];

export interface PaymentMethodsTable {
  /** `pm_…` (ours; a Stripe PaymentMethod id is the credential, never our id). */
  id: string;
  customer_id: string;
  provider: ProviderName;
  status: PaymentMethodStatus;
  /**
   * What makes two reports the same method: Paystack `authorization.signature` (one per card),
   * Stripe's PaymentMethod id. Unique among a customer's live methods of a provider.
   */
  fingerprint: string;
  /**
   * Encrypted (`v1.…`, AES-256-GCM with DATA_ENCRYPTION_KEY): the Paystack authorization_code
   * or the Stripe PaymentMethod id (`pm_…`) that charges it. Never logged, never in a response.
   */
  credential: string;
  /** Stripe `cus_…` the PaymentMethod is attached to (required to charge it); Paystack: null. */
  provider_customer_id: string | null;
  /** The email the provider knows the method under (Paystack charges need it); null: unknown. */
  email: string | null;
  /** `card`, `bank`, … (Paystack `channel`, Stripe `type`). */
  type: string;
  /** `visa`, `mastercard`, … lower case; null when the provider did not say. */
  brand: string | null;
  last4: string | null;
  exp_month: number | null;
  exp_year: number | null;
  /** The default is the live method with the latest default_at (saved, or chosen by PATCH). */
  default_at: string;
  created_at: string;
  updated_at: string;
  detached_at: string | null;
}

export type PaymentMethodRow = Selectable<PaymentMethodsTable>;
