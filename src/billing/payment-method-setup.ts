// Adding a payment method without paying an invoice (SPEC §10 "Adding a method"):
// POST /api/customers/{id}/payment-methods/setup and the portal's "Add a payment method" ask
// the provider for a page where the customer enters a card. Stripe: a Checkout Session in
// `setup` mode, whose SetupIntent's `setup_intent.succeeded` saves the method. Paystack has
// no setup mode: the customer pays a verification charge (the smallest amount Paystack
// itself uses to authorize a card), whose `charge.success` saves the authorization and
// whose money goes back in full through the API refund path (payment-reports.ts). The link
// itself is stored nowhere: the provider's event, signed, carries our metadata back.
import type { Deps } from '../deps.ts';
import { NotFoundError, ValidationError } from '../http/errors.ts';
import { isIdOf, newId } from '../shared/ids.ts';
import type { ProviderName } from '../shared/provider-names.ts';
import { ProviderCallError } from '../providers/provider-api.ts';
import type { PaymentMethodSetup, PaymentMethodSetupInput } from './payment-method-setup.schemas.ts';
import { isHttpUrl } from '../shared/urls.ts';
import { missingApiKeyError, providerCallAppError } from './provider-call-errors.ts';

/** `metadata.purpose` of a Paystack verification charge: saved, refunded, never settles anything. */
export const CARD_VERIFICATION_PURPOSE = 'card_verification';

/** `metadata.purpose` of a Stripe Checkout Session in `setup` mode and its SetupIntent. */
export const METHOD_SETUP_PURPOSE = 'payment_method_setup';

/**
 * The verification charge per currency (minor units): the least Paystack lets a transaction
 * charge in that currency — its API reference, "Supported currencies" (minimum amount per
 * currency, https://paystack.com/docs/api/#supported-currency): NGN 50.00, GHS 0.10,
 * ZAR 1.00, USD 2.00 (USD 0.20, once taken from a third-party help page on Paystack free
 * trials, is below Paystack's USD minimum, so the initialize call would be refused). Another
 * currency is refused.
 */
export const PAYSTACK_VERIFICATION_AMOUNTS: Readonly<Record<string, number>> = Object.freeze({
  NGN: 5000,
  GHS: 10,
  ZAR: 100,
  USD: 200,
});

/**
 * Asks `input.provider` (default DEFAULT_PROVIDER) for a page where live customer
 * `customerId` saves a payment method, without paying an invoice (SPEC §10 "Adding a method").
 * Stripe: a Checkout Session in `setup` mode (nothing charged; `expires_at` is Stripe's).
 * Paystack: a transaction of PAYSTACK_VERIFICATION_AMOUNTS[currency] (minor units), refunded in
 * full when its `charge.success` arrives. `return_url` (default PUBLIC_URL) is where the
 * customer comes back. The method is saved when the provider's signed event arrives, for this
 * customer (our `customer_id` in its metadata), and becomes the default as any new method.
 * Throws 400 `validation_error` (return_url not http(s); a currency Paystack verifies no card
 * in), 404 `not_found` (unknown or deleted customer), 422 `invalid_state` (the provider has no
 * API key, refuses the key or the request), 503 `internal_error` (no usable answer within
 * PROVIDER_TIMEOUT: nothing is charged before the customer acts; retry).
 */
export async function createPaymentMethodSetup(
  deps: Deps,
  customerId: string,
  input: PaymentMethodSetupInput,
): Promise<PaymentMethodSetup> {
  const { db, config } = deps;
  if (input.return_url !== undefined && !isHttpUrl(input.return_url)) {
    throw new ValidationError('return_url must be an absolute http:// or https:// URL', 'return_url');
  }
  const customer = isIdOf('customer', customerId)
    ? await db
        .selectFrom('customers')
        .select(['id', 'email'])
        .where('id', '=', customerId)
        .where('deleted_at', 'is', null)
        .executeTakeFirst()
    : undefined;
  if (!customer) throw new NotFoundError('customer', customerId);
  const provider: ProviderName = input.provider ?? config.defaultProvider;
  const currency = (input.currency ?? (await defaultCurrency(deps, customer.id, provider))).toUpperCase();
  const verificationAmount = provider === 'paystack' ? PAYSTACK_VERIFICATION_AMOUNTS[currency] : 0;
  if (verificationAmount === undefined) {
    throw new ValidationError(
      `Paystack verifies cards in ${Object.keys(PAYSTACK_VERIFICATION_AMOUNTS).join(', ')} only, not ${currency}`,
      'currency',
    );
  }
  const api = deps.providers[provider];
  if (!api) throw missingApiKeyError(provider, 'save payment methods');
  // Paystack allows no `_` in references.
  const reference = newId('paymentMethod').replace('pm_', 'pms-');
  const returnUrl = input.return_url ?? config.publicUrl;
  try {
    if (provider === 'paystack') {
      const answer = await deps.providers.paystack!.initializeTransaction({
        email: customer.email,
        amount: verificationAmount,
        currency,
        reference,
        callback_url: returnUrl,
        metadata: { customer_id: customer.id, purpose: CARD_VERIFICATION_PURPOSE },
      });
      return { provider, url: answer.authorization_url, reference, currency, verification_amount: verificationAmount };
    }
    const session = await deps.providers.stripe!.createSetupSession({
      currency,
      ...(await knownStripeCustomer(deps, customer.id)),
      customerEmail: customer.email,
      successUrl: returnUrl,
      cancelUrl: returnUrl,
      reference,
      metadata: { customer_id: customer.id, purpose: METHOD_SETUP_PURPOSE },
    });
    return {
      provider,
      url: session.url,
      reference,
      currency,
      verification_amount: 0,
      ...(session.expires_at === null ? {} : { expires_at: new Date(session.expires_at * 1000).toISOString() }),
    };
  } catch (error) {
    if (!(error instanceof ProviderCallError)) throw error;
    throw providerCallAppError(error, reference);
  }
}

/** The currency of customer `customerId`'s latest subscription's plan, else the provider's usual one. */
async function defaultCurrency(deps: Deps, customerId: string, provider: ProviderName): Promise<string> {
  const latest = await deps.db
    .selectFrom('subscriptions')
    .innerJoin('plans', 'plans.id', 'subscriptions.plan_id')
    .select('plans.currency')
    .where('subscriptions.customer_id', '=', customerId)
    .orderBy('subscriptions.id', 'desc')
    .limit(1)
    .executeTakeFirst();
  return latest?.currency ?? (provider === 'paystack' ? 'NGN' : 'USD');
}

/** The Stripe customer (`cus_…`) a live saved method of ours is attached to, so a new one joins it. */
async function knownStripeCustomer(deps: Deps, customerId: string): Promise<{ customer?: string }> {
  const row = await deps.db
    .selectFrom('payment_methods')
    .select('provider_customer_id')
    .where('customer_id', '=', customerId)
    .where('provider', '=', 'stripe')
    .where('status', '=', 'active')
    .where('provider_customer_id', 'is not', null)
    .orderBy('default_at', 'desc')
    .limit(1)
    .executeTakeFirst();
  return row?.provider_customer_id ? { customer: row.provider_customer_id } : {};
}
