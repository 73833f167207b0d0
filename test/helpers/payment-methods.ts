// Saved payment methods for tests and benches: saved through the module's own writer (as a
// provider event would), so runs that charge start from a real, encrypted row.
import type { Transaction } from 'kysely';
import type { Database } from '../../src/db/database.ts';
import type { ProviderName } from '../../src/shared/provider-names.ts';
import {
  type PaymentMethodContext,
  type PaymentMethodRow,
  savePaymentMethod,
} from '../../src/modules/payment-methods/payment-methods.ts';
import type { TestApp } from './app.ts';

let sequence = 0;

/** What a test may choose of a saved method; the rest is a Visa card ending 4081, expiring 12/2030. */
export interface TestPaymentMethodOverrides {
  credential?: string;
  providerCustomerId?: string;
  email?: string;
  last4?: string;
}

/**
 * Saves a reusable card for `customerId` at `provider` inside `trx` (it becomes the default),
 * with any Deps (or its clock and encryption key). Paystack: credential `AUTH_test…` (the fake
 * Paystack charges any `AUTH_` code), fingerprint `SIG_test…`, email given or null; Stripe:
 * credential `pm_test…` and `providerCustomerId` (default `cus_test…`). Returns the row
 * (credential encrypted). Throws EncryptionKeyMissingError without DATA_ENCRYPTION_KEY.
 */
export async function saveTestCard(
  trx: Transaction<Database>,
  ctx: PaymentMethodContext,
  customerId: string,
  provider: ProviderName,
  overrides: TestPaymentMethodOverrides = {},
): Promise<PaymentMethodRow> {
  sequence += 1;
  const unique = `${Date.now().toString(36)}${sequence}`;
  const credential = overrides.credential ?? (provider === 'paystack' ? `AUTH_test${unique}` : `pm_test${unique}`);
  const { row } = await savePaymentMethod(trx, ctx, {
    customerId,
    provider,
    fingerprint: provider === 'paystack' ? `SIG_test${unique}` : credential,
    credential,
    providerCustomerId: provider === 'stripe' ? (overrides.providerCustomerId ?? `cus_test${unique}`) : null,
    email: overrides.email ?? null,
    type: 'card',
    brand: 'visa',
    last4: overrides.last4 ?? '4081',
    expMonth: 12,
    expYear: 2030,
  });
  return row;
}

/** saveTestCard for a test app, in a transaction of its own. */
export async function saveTestPaymentMethod(
  app: TestApp,
  customerId: string,
  provider: ProviderName,
  overrides: TestPaymentMethodOverrides = {},
): Promise<PaymentMethodRow> {
  return app.deps.db.transaction().execute((trx) => saveTestCard(trx, app.deps, customerId, provider, overrides));
}
