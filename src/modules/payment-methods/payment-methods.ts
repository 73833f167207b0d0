// The only writer of `payment_methods` (SPEC §10): saves a reusable method learned from a
// succeeded payment, finds the one to charge, detaches and chooses the default. The provider
// credential is encrypted here with DATA_ENCRYPTION_KEY and decrypted only by
// findDefaultPaymentMethod, for the provider call that charges it; nothing else sees it.
import { type Kysely, sql, type Transaction } from 'kysely';
import type { CollectingProvider, Config } from '../../config.ts';
import type { Database } from '../../db/database.ts';
import type { Clock } from '../../shared/clock.ts';
import { decryptSecret, encryptSecret } from '../../shared/encryption.ts';
import { newId } from '../../shared/ids.ts';
import type { PaymentMethodRow, PaymentMethodsTable } from './payment-methods.table.ts';

export type { PaymentMethodRow };

/** What saving and charging need: the clock and DATA_ENCRYPTION_KEY. */
export interface PaymentMethodContext {
  clock: Clock;
  config: Pick<Config, 'dataEncryptionKey'>;
}

/** A reusable method as a provider reported it (SPEC §10). Display fields may be null. */
export interface ReportedPaymentMethod {
  customerId: string;
  provider: CollectingProvider;
  /** Paystack `authorization.signature`; Stripe PaymentMethod id. */
  fingerprint: string;
  /** Plaintext: Paystack `authorization_code`, Stripe PaymentMethod id `pm_…`. Stored encrypted. */
  credential: string;
  /** Stripe `cus_…`; null for Paystack. */
  providerCustomerId: string | null;
  email: string | null;
  type: string;
  brand: string | null;
  last4: string | null;
  expMonth: number | null;
  expYear: number | null;
}

/** Thrown when a method must be encrypted or decrypted and DATA_ENCRYPTION_KEY is not set. */
export class EncryptionKeyMissingError extends Error {
  constructor() {
    super('DATA_ENCRYPTION_KEY is not set: saved payment methods cannot be stored or charged');
    this.name = 'EncryptionKeyMissingError';
  }
}

function keyOf(ctx: Pick<PaymentMethodContext, 'config'>): Buffer {
  const key = ctx.config.dataEncryptionKey;
  if (key === undefined) throw new EncryptionKeyMissingError();
  return key;
}

/**
 * Saves `method` for its customer in `trx`, unless the customer already has a live method
 * with the same provider and fingerprint (the same card reported again: nothing changes, and
 * it does not become the default again). A new method becomes the customer's default (the
 * latest reusable one, SPEC §10). Returns the row and whether it was created. Throws
 * EncryptionKeyMissingError without DATA_ENCRYPTION_KEY (config refuses to start so).
 */
export async function savePaymentMethod(
  trx: Transaction<Database>,
  ctx: PaymentMethodContext,
  method: ReportedPaymentMethod,
): Promise<{ row: PaymentMethodRow; created: boolean }> {
  const now = ctx.clock.now().toISOString();
  const row: PaymentMethodsTable = {
    id: newId('paymentMethod'),
    customer_id: method.customerId,
    provider: method.provider,
    status: 'active',
    fingerprint: method.fingerprint,
    credential: encryptSecret(keyOf(ctx), method.credential),
    provider_customer_id: method.providerCustomerId,
    email: method.email,
    type: method.type,
    brand: method.brand,
    last4: method.last4,
    exp_month: method.expMonth,
    exp_year: method.expYear,
    default_at: now,
    created_at: now,
    updated_at: now,
    detached_at: null,
  };
  // The partial unique index (customer, provider, fingerprint) among live rows decides: two
  // reports of one card at once make one row on both databases.
  const inserted = await trx
    .insertInto('payment_methods')
    .values(row)
    .onConflict((oc) =>
      oc
        .columns(['customer_id', 'provider', 'fingerprint'])
        .where(sql<boolean>`status = 'active'`)
        .doNothing(),
    )
    .returning('id')
    .executeTakeFirst();
  if (inserted) return { row, created: true };
  const existing = await trx
    .selectFrom('payment_methods')
    .selectAll()
    .where('customer_id', '=', method.customerId)
    .where('provider', '=', method.provider)
    .where('fingerprint', '=', method.fingerprint)
    .where('status', '=', 'active')
    .executeTakeFirstOrThrow();
  return { row: existing, created: false };
}

/** A method ready to charge: the decrypted credential and what the provider call needs. */
export interface ChargeableMethod {
  /** `pm_…` (ours). */
  id: string;
  provider: CollectingProvider;
  /** Plaintext Paystack authorization_code or Stripe PaymentMethod id. A secret: never log it. */
  credential: string;
  /** Stripe `cus_…`; null for Paystack. */
  providerCustomerId: string | null;
  /** The email the method is known under at the provider; null: use the customer's. */
  email: string | null;
}

/**
 * Customer `customerId`'s default method: the live one with the latest `default_at` (ties:
 * the latest id), decrypted for charging; undefined when the customer has none. Throws
 * EncryptionKeyMissingError without DATA_ENCRYPTION_KEY, DecryptionError when the stored value
 * does not open with it (a changed key).
 */
export async function findDefaultPaymentMethod(
  db: Kysely<Database>,
  ctx: Pick<PaymentMethodContext, 'config'>,
  customerId: string,
): Promise<ChargeableMethod | undefined> {
  const row = await db
    .selectFrom('payment_methods')
    .select(['id', 'provider', 'credential', 'provider_customer_id', 'email'])
    .where('customer_id', '=', customerId)
    .where('status', '=', 'active')
    .orderBy('default_at', 'desc')
    .orderBy('id', 'desc')
    .executeTakeFirst();
  if (!row) return undefined;
  return {
    id: row.id,
    provider: row.provider,
    credential: decryptSecret(keyOf(ctx), row.credential),
    providerCustomerId: row.provider_customer_id,
    email: row.email,
  };
}
