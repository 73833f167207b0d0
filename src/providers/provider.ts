// Providers speak our vocabulary (ARCHITECTURE "Style" 6): each adapter verifies a request
// on its raw bytes and turns the provider's payload into a ProviderEvent. Only the files in
// providers/ know a provider's field names; adding one is a folder, its name in
// shared/provider-names.ts and a registry line.
import type { Config } from '../config.ts';
import type { ProviderName } from '../shared/provider-names.ts';

/** A payment as one provider event reports it. */
export interface PaymentReport {
  /** The provider's id of the payment: one payment per (provider, reference). */
  reference: string;
  /** Minor units, a non-negative integer (processing ignores a payment of 0). */
  amount: number;
  /** ISO 4217 upper case, or null when the event does not say (resolved from the subscription's plan). */
  currency: string | null;
  email: string | null;
  /** The payer's name when the event gives one (for customers created from the email). */
  name: string | null;
  /** Our metadata keys the integration set (`customer_id`, `subscription_id`); strings only. */
  metadata: Record<string, string>;
  /** The provider's subscription id when the payment belongs to one (Paystack `SUB_…`, Stripe `sub_…`). */
  subscriptionReference: string | null;
  /** Why it failed (failed payments only). */
  failureReason: string | null;
  /** ISO 8601 UTC. */
  occurredAt: string;
  /**
   * The reusable card or account a succeeded payment used, when the provider says it can be
   * charged again (SPEC §10: saved for the payment's customer); absent or null otherwise.
   */
  method?: ReusableMethodReport | null;
}

/**
 * A reusable payment method as a provider event reports it (SPEC §10). `credential` is a
 * secret (Paystack authorization_code, Stripe PaymentMethod id): never log it or show it.
 */
export interface ReusableMethodReport {
  /** What makes two reports the same method: Paystack `signature` (else the code), Stripe `pm_…`. */
  fingerprint: string;
  credential: string;
  /** Stripe `cus_…` the PaymentMethod is attached to; null for Paystack. */
  providerCustomerId: string | null;
  /** The email the provider knows the method under (Paystack `customer.email`). */
  email: string | null;
  /** `card`, `bank`, … */
  type: string;
  /** Lower case; null when the event does not say. */
  brand: string | null;
  last4: string | null;
  /** 1–12, or null. */
  expMonth: number | null;
  expYear: number | null;
}

/**
 * One refund as a provider reports it: `succeeded` (the money went back), or `failed` (it
 * failed or was cancelled, possibly after a success report). Pending refunds are not reports.
 */
export interface RefundReport {
  /** The provider's id of the refund: one refund per (provider, reference). */
  reference: string;
  /** Minor units, above 0. */
  amount: number;
  currency: string;
  status: 'succeeded' | 'failed';
  /** ISO 8601 UTC. */
  occurredAt: string;
  /**
   * Our refund id (`re_…`) when the provider carries it back (Stripe: the Refund's
   * `metadata.refund_id`, set when the API asked for it): settles that pending refund (SPEC §10).
   */
  requestReference?: string | null;
  /**
   * The report cannot name the refund a create call returned (Paystack's refund events carry
   * neither its id nor anything of ours): it settles the oldest pending API refund of the
   * same amount on the payment, if any (SPEC §10).
   */
  matchByAmount?: boolean;
}

/** A verified event in our vocabulary. */
export type ProviderEvent =
  | { kind: 'payment_succeeded' | 'payment_failed'; payment: PaymentReport }
  | {
      kind: 'refunds';
      /** The provider reference of the refunded payment. */
      paymentReference: string;
      /** The refunds the event reports, at least one. */
      refunds: RefundReport[];
    }
  | {
      /**
       * Two provider ids name one payment (Stripe `invoice_payment.paid`: the invoice and the
       * PaymentIntent that paid it). Reports under either id land on one payment, keyed
       * `canonicalReference`; payments already recorded under both are merged.
       */
      kind: 'payment_linked';
      /** The alias, e.g. the Stripe invoice id `in_…`. */
      reference: string;
      /** The id the payment is keyed by, e.g. the Stripe PaymentIntent id `pi_…`. */
      canonicalReference: string;
    }
  | {
      /**
       * A method saved without a payment (Stripe `setup_intent.succeeded` of a Checkout
       * Session in `setup` mode, SPEC §10 "Adding a method"): saved for the customer our
       * metadata names (`customer_id`).
       */
      kind: 'method_saved';
      /** Our metadata on the SetupIntent. */
      metadata: Record<string, string>;
      method: ReusableMethodReport;
    }
  | { kind: 'ignored'; reason: string };

/** What the inbox stores about an event before anything else: its unique key and type. */
export interface EventIdentity {
  /**
   * Unique per provider; a repeat is a duplicate delivery. At most 255 characters and no
   * U+0000: build it with eventKey/bodyHashKey (provider-values.ts), which hash otherwise.
   */
  key: string;
  type: string;
}

/** A provider's webhook scheme and payloads. */
export interface ProviderAdapter {
  /** The `p` query value, e.g. `paystack`. */
  readonly name: ProviderName;
  /** The signature header (lower case), for the OpenAPI document. */
  readonly signatureHeader: string;
  /** The configured secret; empty when the provider is not set up (→ 401). */
  secret(config: Readonly<Config>): string;
  /**
   * Verifies `raw` (the exact request bytes) against the request's headers in constant
   * time, then parses it. Returns the parsed JSON. Throws SignatureError (→ 401) or
   * BodyNotJsonError (→ 400, only after the signature passed). `now` is the receive time.
   */
  verify(raw: Buffer, headers: Record<string, string | string[] | undefined>, secret: string, now: Date): unknown;
  /**
   * The inbox key and type of a verified body (any JSON value). Throws NulInValueError only,
   * when a value it reads holds U+0000 (SPEC §5: 400, nothing stored).
   */
  identify(body: unknown, raw: Buffer): EventIdentity;
  /**
   * Our reading of a verified body. `receivedAt` stands in for times the payload lacks.
   * Throws UnusableEventError when a handled type lacks what it needs.
   */
  normalize(body: unknown, receivedAt: Date): ProviderEvent;
  /**
   * A copy of a verified body with the secrets it may carry replaced (SPEC §10: a reusable
   * method's credential), for showing a stored payload (GET /api/provider-events/{id}).
   */
  redact(body: unknown): unknown;
}

/** The request is not provably from the provider (SPEC §5: 401, nothing stored). */
export class SignatureError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SignatureError';
  }
}

/** The body passed the signature but is not JSON (SPEC §5: 400, nothing stored). */
export class BodyNotJsonError extends Error {
  constructor() {
    super('request body is not valid JSON');
    this.name = 'BodyNotJsonError';
  }
}

/**
 * A verified event of a handled type that cannot be used (missing fields, bad amount,
 * unknown currency): kept in the inbox as failed with this reason; a retry would not help.
 */
export class UnusableEventError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UnusableEventError';
  }
}

/**
 * A verified event holds U+0000 in a value that must be used exactly as sent (SPEC §5: an
 * identifier, code, currency or amount): the event cannot be recorded. POST /api/notify
 * answers 400 and stores nothing, so the provider retries; a row stored earlier fails for good.
 */
export class NulInValueError extends UnusableEventError {
  /** Where, as the provider's field path (`data.reference`). */
  readonly field: string;
  constructor(field: string) {
    super(`${field} contains a NUL character`);
    this.name = 'NulInValueError';
    this.field = field;
  }
}
