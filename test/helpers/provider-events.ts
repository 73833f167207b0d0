// Provider events for tests: real signatures (HMAC-SHA512 for Paystack, Stripe's own test
// header for Stripe) over payloads shaped like the providers' documented samples.
import { createHmac } from 'node:crypto';
import { sql } from 'kysely';
import Stripe from 'stripe';
import { DATA_ENCRYPTION_KEY, type TestApp, type TestResponse } from './app.ts';

export { DATA_ENCRYPTION_KEY };
import { ON_POSTGRES } from './database.ts';

export const PAYSTACK_SECRET = 'sk_test_4e7b1c0d9a8f6e5d4c3b2a1f0e9d8c7b6a5f4e3d';
export const STRIPE_SECRET = 'whsec_test_9f8e7d6c5b4a39281706f5e4d3c2b1a0';
/** Environment that configures both providers (pass to buildTestApp's `env`). */
export const PROVIDER_ENV = {
  PAYSTACK_SECRET_KEY: PAYSTACK_SECRET,
  STRIPE_WEBHOOK_SECRET: STRIPE_SECRET,
  DATA_ENCRYPTION_KEY,
};

let sequence = 0;
/** A fresh number for unique provider ids. */
export function nextSeq(): number {
  sequence += 1;
  return Date.now() * 1000 + sequence;
}

/** Hex HMAC-SHA512 of `body` keyed with `secret` (Paystack's X-Paystack-Signature). */
export function signPaystack(body: string | Buffer, secret = PAYSTACK_SECRET): string {
  return createHmac('sha512', secret).update(body).digest('hex');
}

/** A Stripe-Signature header for `body` at `timestamp` (unix seconds), made by Stripe's library. */
export function signStripe(body: string, timestamp: number, secret = STRIPE_SECRET, scheme = 'v1'): string {
  return Stripe.webhooks.generateTestHeaderString({ payload: body, secret, timestamp, scheme });
}

/** POSTs a signed Paystack event (`payload` is serialized unless a string). */
export function postPaystack(
  app: TestApp,
  payload: unknown,
  options: { signature?: string | null; headers?: Record<string, string> } = {},
): Promise<TestResponse> {
  const body = typeof payload === 'string' ? payload : JSON.stringify(payload);
  const headers: Record<string, string> = { 'content-type': 'application/json', ...options.headers };
  const signature = options.signature === undefined ? signPaystack(body) : options.signature;
  if (signature !== null) headers['x-paystack-signature'] = signature;
  return app.request('POST', '/api/notify?p=paystack', { rawBody: body, headers, key: null });
}

/** POSTs a Stripe event signed at the app clock's time (or `timestamp`). */
export function postStripe(
  app: TestApp,
  event: unknown,
  options: { signature?: string | null; timestamp?: number } = {},
): Promise<TestResponse> {
  const body = typeof event === 'string' ? event : JSON.stringify(event);
  const timestamp = options.timestamp ?? Math.floor(app.clock.now().getTime() / 1000);
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  const signature = options.signature === undefined ? signStripe(body, timestamp) : options.signature;
  if (signature !== null) headers['stripe-signature'] = signature;
  return app.request('POST', '/api/notify?p=stripe', { rawBody: body, headers, key: null });
}

// ---- Paystack payloads (https://paystack.com/docs/payments/webhooks/) ----

export interface PaystackChargeOptions {
  id?: number;
  reference?: string;
  amount?: unknown;
  currency?: unknown;
  email?: string;
  metadata?: unknown;
  subscriptionCode?: string;
}

/** A `charge.success` event. */
export function paystackCharge(options: PaystackChargeOptions = {}) {
  const n = nextSeq();
  return {
    event: 'charge.success',
    data: {
      id: options.id ?? n,
      domain: 'test',
      status: 'success',
      reference: options.reference ?? `T${n}`,
      amount: options.amount ?? 500000,
      message: null,
      gateway_response: 'Successful',
      paid_at: '2026-01-15T09:59:58.000Z',
      created_at: '2026-01-15T09:59:40.000Z',
      channel: 'card',
      currency: options.currency ?? 'NGN',
      ip_address: '102.89.2.10',
      metadata: options.metadata ?? '',
      fees: 7500,
      authorization: {
        authorization_code: 'AUTH_8dfhjjdt',
        bin: '408408',
        last4: '4081',
        exp_month: '12',
        exp_year: '2030',
        channel: 'card',
        card_type: 'visa ',
        bank: 'TEST BANK',
        country_code: 'NG',
        brand: 'visa',
        reusable: true,
        signature: 'SIG_yEXu7dLBeqG0kU7g95Ke',
      },
      customer: {
        id: 84312,
        first_name: 'Ada',
        last_name: 'Obi',
        email: options.email ?? `payer${n}@example.com`,
        customer_code: 'CUS_hdhye17yj8qd2tx',
        phone: null,
        metadata: null,
        risk_action: 'default',
      },
      plan: {},
      ...(options.subscriptionCode ? { subscription: { subscription_code: options.subscriptionCode } } : {}),
      requested_amount: options.amount ?? 500000,
    },
  };
}

/** A `refund.processed` (or `refund.failed`) event: no id/reference of its own, `amount` as a string. */
export function paystackRefund(options: {
  transactionReference: string;
  amount?: unknown;
  refundReference?: string | null;
  currency?: string;
  failed?: boolean;
}) {
  return {
    event: options.failed ? 'refund.failed' : 'refund.processed',
    data: {
      status: options.failed ? 'failed' : 'processed',
      transaction_reference: options.transactionReference,
      refund_reference: options.refundReference === undefined ? `${nextSeq()}` : options.refundReference,
      amount: options.amount ?? '500000',
      currency: options.currency ?? 'NGN',
      processor: 'mpgs_zen',
      customer: { first_name: 'Ada', last_name: 'Obi', email: 'ada@example.com' },
      integration: 412829,
      domain: 'test',
    },
  };
}

/** An `invoice.payment_failed` event for the Paystack subscription `subscriptionCode`. */
export function paystackInvoiceFailed(options: {
  subscriptionCode: string;
  amount?: number;
  email?: string;
  transaction?: Record<string, unknown>;
  invoiceCode?: string;
}) {
  return {
    event: 'invoice.payment_failed',
    data: {
      domain: 'test',
      invoice_code: options.invoiceCode ?? `INV_${nextSeq()}`,
      amount: options.amount ?? 500000,
      period_start: '2026-01-15T10:00:00.000Z',
      period_end: '2026-02-15T10:00:00.000Z',
      status: 'pending',
      paid: false,
      paid_at: null,
      description: null,
      authorization: { authorization_code: 'AUTH_fmmpvpvphp', last4: '6666', brand: 'verve' },
      subscription: {
        status: 'active',
        subscription_code: options.subscriptionCode,
        email_token: 'gptk4apuohyyjsg',
        amount: options.amount ?? 500000,
        cron_expression: '0 0 15 * *',
        next_payment_date: '2026-02-15T00:00:00.000Z',
        open_invoice: null,
      },
      customer: {
        id: 6910995,
        first_name: null,
        last_name: null,
        email: options.email ?? 'someone@example.com',
        customer_code: 'CUS_3p3ylxyf07605kx',
        phone: null,
        metadata: null,
        risk_action: 'default',
      },
      transaction: options.transaction ?? {},
      created_at: '2026-01-15T10:00:03.000Z',
    },
  };
}

// ---- Stripe payloads (https://docs.stripe.com/api/events) ----

/** A Stripe event envelope around `object`. */
export function stripeEvent(
  type: string,
  object: Record<string, unknown>,
  options: { id?: string; apiVersion?: string } = {},
) {
  return {
    id: options.id ?? `evt_${nextSeq()}`,
    object: 'event',
    api_version: options.apiVersion ?? '2025-03-31.basil',
    created: 1768471200,
    data: { object },
    livemode: false,
    pending_webhooks: 1,
    request: { id: null, idempotency_key: null },
    type,
  };
}

/** A PaymentIntent object. */
export function stripePaymentIntent(
  options: {
    id?: string;
    amount?: unknown;
    currency?: unknown;
    email?: string | null;
    metadata?: Record<string, string>;
    status?: string;
    error?: string;
  } = {},
) {
  const amount = options.amount ?? 2000;
  return {
    id: options.id ?? `pi_${nextSeq()}`,
    object: 'payment_intent',
    amount,
    amount_received: options.status === 'requires_payment_method' ? 0 : amount,
    currency: options.currency ?? 'usd',
    customer: 'cus_StripeCustomer1',
    latest_charge: `ch_${nextSeq()}`,
    last_payment_error: options.error
      ? { code: 'card_declined', decline_code: 'insufficient_funds', message: options.error, type: 'card_error' }
      : null,
    metadata: options.metadata ?? {},
    receipt_email: options.email === undefined ? `buyer${nextSeq()}@example.com` : options.email,
    status: options.status ?? 'succeeded',
    created: 1768471100,
    livemode: false,
  };
}

/**
 * An Invoice object. `style: 'legacy'` puts the subscription at `invoice.subscription` and
 * the PaymentIntent at `invoice.payment_intent` (before 2025-03-31); `'basil'` puts them at
 * `invoice.parent.subscription_details.subscription` and `invoice.payments`.
 */
export function stripeInvoice(options: {
  style: 'legacy' | 'basil';
  subscription: string | null;
  paymentIntent?: string | null;
  amount?: number;
  paid?: boolean;
  email?: string;
  subscriptionMetadata?: Record<string, string>;
}) {
  const amount = options.amount ?? 2000;
  const paid = options.paid ?? true;
  const base = {
    id: `in_${nextSeq()}`,
    object: 'invoice',
    amount_due: amount,
    amount_paid: paid ? amount : 0,
    amount_remaining: paid ? 0 : amount,
    attempt_count: 1,
    billing_reason: 'subscription_cycle',
    currency: 'usd',
    customer: 'cus_StripeCustomer1',
    customer_email: options.email ?? `subscriber${nextSeq()}@example.com`,
    customer_name: 'Grace Hopper',
    metadata: {},
    status: paid ? 'paid' : 'open',
    created: 1768471000,
  };
  const metadata = options.subscriptionMetadata ?? {};
  if (options.style === 'legacy') {
    return {
      ...base,
      subscription: options.subscription,
      subscription_details: { metadata },
      payment_intent: options.paymentIntent ?? null,
      charge: null,
      paid,
    };
  }
  return {
    ...base,
    parent: options.subscription
      ? {
          type: 'subscription_details',
          quote_details: null,
          subscription_details: { metadata, subscription: options.subscription },
        }
      : null,
    ...(options.paymentIntent
      ? {
          payments: {
            object: 'list',
            data: [
              {
                id: `inpay_${nextSeq()}`,
                object: 'invoice_payment',
                amount_paid: paid ? amount : null,
                currency: 'usd',
                is_default: true,
                payment: { type: 'payment_intent', payment_intent: options.paymentIntent },
                status: paid ? 'paid' : 'open',
              },
            ],
            has_more: false,
          },
        }
      : {}),
  };
}

/**
 * An InvoicePayment object, as `invoice_payment.paid` carries it (API version 2025-05-28 and
 * later): which payment paid which invoice. `payment.type` is `payment_intent` for card and
 * bank payments; `charge` (a charge without PaymentIntent) and `payment_record` (paid
 * outside Stripe) name other objects.
 */
export function stripeInvoicePayment(options: {
  invoice: string;
  paymentIntent: string;
  amount?: number;
  currency?: string;
  status?: 'open' | 'paid' | 'canceled';
  type?: 'payment_intent' | 'charge' | 'payment_record';
}) {
  const amount = options.amount ?? 2000;
  const status = options.status ?? 'paid';
  const type = options.type ?? 'payment_intent';
  const payment =
    type === 'payment_intent'
      ? { type, payment_intent: options.paymentIntent }
      : type === 'charge'
        ? { type, charge: `ch_${nextSeq()}` }
        : { type, payment_record: `pr_${nextSeq()}` };
  return {
    id: `inpay_${nextSeq()}`,
    object: 'invoice_payment',
    amount_paid: status === 'paid' ? amount : null,
    amount_requested: amount,
    created: 1768471050,
    currency: options.currency ?? 'usd',
    invoice: options.invoice,
    is_default: true,
    livemode: false,
    payment,
    status,
    status_transitions: {
      canceled_at: status === 'canceled' ? 1768471200 : null,
      paid_at: status === 'paid' ? 1768471200 : null,
    },
  };
}

/** A Refund object. */
export function stripeRefund(options: {
  paymentIntent: string;
  amount: number;
  id?: string;
  status?: string;
  currency?: string;
}) {
  return {
    id: options.id ?? `re_${nextSeq()}`,
    object: 'refund',
    amount: options.amount,
    charge: `ch_${nextSeq()}`,
    currency: options.currency ?? 'usd',
    payment_intent: options.paymentIntent,
    reason: 'requested_by_customer',
    status: options.status ?? 'succeeded',
    created: 1768471300,
  };
}

/** A Charge object after refunds; `refunds` lists them only on older API versions. */
export function stripeRefundedCharge(options: {
  paymentIntent: string;
  amount: number;
  amountRefunded: number;
  refunds?: ReturnType<typeof stripeRefund>[];
}) {
  return {
    id: `ch_${nextSeq()}`,
    object: 'charge',
    amount: options.amount,
    amount_captured: options.amount,
    amount_refunded: options.amountRefunded,
    currency: 'usd',
    payment_intent: options.paymentIntent,
    refunded: options.amountRefunded >= options.amount,
    status: 'succeeded',
    billing_details: { email: null },
    metadata: {},
    ...(options.refunds
      ? { refunds: { object: 'list', data: options.refunds, has_more: false, total_count: options.refunds.length } }
      : {}),
  };
}

/**
 * Makes every insert into `payments` fail, as a real database error would (a retryable
 * failure for the inbox); `repairPayments` undoes it.
 */
export async function breakPayments(app: TestApp): Promise<void> {
  if (ON_POSTGRES) {
    await sql`create function refuse_payment() returns trigger language plpgsql as $$ begin raise exception 'payments are unavailable'; end $$`.execute(
      app.deps.db,
    );
    await sql`create trigger refuse_payment before insert on payments for each row execute function refuse_payment()`.execute(
      app.deps.db,
    );
  } else {
    await sql`create trigger refuse_payment before insert on payments begin select raise(abort, 'payments are unavailable'); end`.execute(
      app.deps.db,
    );
  }
}

/** Removes the trigger `breakPayments` made. */
export async function repairPayments(app: TestApp): Promise<void> {
  await sql`drop trigger refuse_payment ${ON_POSTGRES ? sql`on payments` : sql``}`.execute(app.deps.db);
}
