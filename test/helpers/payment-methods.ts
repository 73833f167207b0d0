// Saved payment methods for tests: saved through the module's own writer (as a provider event
// would), so tests of charging start from a real, encrypted row.
import type { ProviderName } from '../../src/shared/provider-names.ts';
import { type PaymentMethodRow, savePaymentMethod } from '../../src/modules/payment-methods/payment-methods.ts';
import type { TestApp } from './app.ts';

let sequence = 0;

/**
 * Saves a reusable method for `customerId` at `provider` (it becomes the default). Paystack:
 * credential `AUTH_test…`, email given or null; Stripe: credential `pm_test…` and
 * `providerCustomerId` (default `cus_test…`). Returns the row (credential encrypted).
 */
export async function saveTestPaymentMethod(
  app: TestApp,
  customerId: string,
  provider: ProviderName,
  overrides: { credential?: string; providerCustomerId?: string; email?: string; last4?: string } = {},
): Promise<PaymentMethodRow> {
  sequence += 1;
  const unique = `${Date.now().toString(36)}${sequence}`;
  const credential = overrides.credential ?? (provider === 'paystack' ? `AUTH_test${unique}` : `pm_test${unique}`);
  const { row } = await app.deps.db.transaction().execute((trx) =>
    savePaymentMethod(trx, app.deps, {
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
    }),
  );
  return row;
}
