// A fake Paystack API for tests (shapes from PaystackOSS/openapi: TransactionInitialize,
// TransactionInitializeResponse, VerifyResponse, RefundCreate, RefundCreateResponse,
// RefundListResponse, the Error model): POST /transaction/initialize, GET
// /transaction/verify/:reference, POST /refund and GET /refund, `Authorization: Bearer <secret
// key>` checked, every call recorded, errors and timeouts on demand (FakeProviderServer.queue,
// inject), every charge and refund it made in `ledger`, the refund list paginated as Paystack's
// (`perPage`, `page`, `from`, `to`; `meta.total`/`pageCount`) over any number of the account's
// other refunds (seedRefunds), and the signed refund webhooks Paystack would send
// (sendRefundEvent).
import type { TestContext } from 'node:test';
import { FakeProviderServer, markerOf, type FakeAnswer, type RecordedCall } from './fake-provider.ts';
import { PAYSTACK_SECRET, paystackCharge, signPaystack } from './provider-events.ts';

/** A transaction the fake knows, by reference. */
export interface FakePaystackTransaction {
  id: number;
  reference: string;
  access_code: string;
  email: string;
  amount: number;
  currency: string;
  metadata: unknown;
  callback_url: string | undefined;
  /** `abandoned` until a test settles it (`success`, `failed`). */
  status: string;
  created_at: string;
  paid_at: string | null;
}

const REFERENCE = /^[A-Za-z0-9.=-]+$/;

/** What a fake charge does: approve, decline for lack of funds, or pause for the customer. */
export type PaystackChargeOutcome = 'success' | 'insufficient_funds' | 'paused';
const CURRENCIES = ['NGN', 'GHS', 'KES', 'ZAR', 'USD'];

function error(status: number, message: string, code?: string): FakeAnswer {
  return {
    status,
    body: code
      ? {
          status: false,
          message,
          meta: { nextStep: 'Check the request and try again' },
          type: 'validation_error',
          code,
        }
      : { status: false, message },
  };
}

/** A refund the fake knows, by id. */
export interface FakePaystackRefund {
  id: number;
  transaction_reference: string;
  amount: number;
  currency: string;
  merchant_note: string;
  customer_note: string;
  /** `pending` until a test sends its event (`processed`, `failed`). */
  status: string;
  createdAt: string;
}

export class FakePaystack extends FakeProviderServer {
  readonly transactions = new Map<string, FakePaystackTransaction>();
  readonly refunds = new Map<number, FakePaystackRefund>();
  #nextId = 4_099_260_516;
  #nextRefundId = 3_018_284;

  constructor(secretKey = PAYSTACK_SECRET) {
    super({
      apiKey: secretKey,
      decode: (raw) => JSON.parse(raw) as Record<string, unknown>,
      handle: (call) => this.#route(call),
      unauthorized: error(401, 'Invalid key'),
      serverError: error(500, 'An error occurred'),
    });
  }

  /** A started fake, closed when `t` ends. */
  static async start(t: TestContext, secretKey?: string): Promise<FakePaystack> {
    return new FakePaystack(secretKey).start(t);
  }

  /** The recorded POST /transaction/initialize calls. */
  get initializeCalls(): RecordedCall[] {
    return this.calls.filter((c) => c.method === 'POST' && c.path === '/transaction/initialize');
  }

  /** Marks the transaction `reference` as paid (`success`) or `failed`, as a customer's payment would. */
  settle(reference: string, status: 'success' | 'failed'): void {
    const transaction = this.transactions.get(reference);
    if (!transaction) throw new Error(`fake Paystack has no transaction ${reference}`);
    transaction.status = status;
    transaction.paid_at = status === 'success' ? new Date().toISOString() : null;
  }

  #route(call: RecordedCall): FakeAnswer {
    if (call.method === 'POST' && call.path === '/transaction/initialize') return this.#initialize(call.body);
    if (call.method === 'POST' && call.path === '/transaction/charge_authorization') return this.#charge(call.body);
    if (call.path === '/refund' || call.path.startsWith('/refund?')) return this.#refundRoute(call);
    const verify = /^\/transaction\/verify\/([^/?]+)$/.exec(call.path);
    if (call.method === 'GET' && verify) return this.#verify(decodeURIComponent(verify[1]!));
    return error(404, 'Not found');
  }

  #initialize(body: Record<string, unknown>): FakeAnswer {
    const { email, amount, currency = 'NGN', reference, callback_url, metadata } = body;
    if (typeof email !== 'string' || !email.includes('@'))
      return error(400, 'Invalid Email Address Passed', 'invalid_params');
    if (!Number.isInteger(amount) || (amount as number) <= 0)
      return error(400, 'Invalid Amount Sent', 'invalid_params');
    if (typeof currency !== 'string' || !CURRENCIES.includes(currency)) {
      return error(400, 'Currency not supported by merchant', 'unsupported_currency');
    }
    if (reference !== undefined && (typeof reference !== 'string' || !REFERENCE.test(reference))) {
      return error(400, 'Invalid transaction reference', 'invalid_params');
    }
    const ref = (reference as string | undefined) ?? `T${this.#nextId}`;
    if (this.transactions.has(ref)) return error(400, 'Duplicate Transaction Reference', 'duplicate_reference');
    const accessCode = `acc_${Math.random().toString(36).slice(2, 12)}`;
    this.transactions.set(ref, {
      id: this.#nextId++,
      reference: ref,
      access_code: accessCode,
      email,
      amount: amount as number,
      currency,
      metadata,
      callback_url: typeof callback_url === 'string' ? callback_url : undefined,
      status: 'abandoned',
      created_at: new Date().toISOString(),
      paid_at: null,
    });
    return {
      status: 200,
      body: {
        status: true,
        message: 'Authorization URL created',
        data: {
          authorization_url: `https://checkout.paystack.com/${accessCode}`,
          access_code: accessCode,
          reference: ref,
        },
      },
    };
  }

  #verify(reference: string): FakeAnswer {
    const tx = this.transactions.get(reference);
    if (!tx) return error(404, 'Transaction reference not found');
    return {
      status: 200,
      body: {
        status: true,
        message: 'Verification successful',
        data: {
          id: tx.id,
          domain: 'test',
          status: tx.status,
          reference: tx.reference,
          receipt_number: null,
          amount: tx.amount,
          message: null,
          gateway_response:
            tx.status === 'success'
              ? 'Successful'
              : tx.status === 'failed'
                ? 'Declined'
                : 'The transaction was not completed',
          paid_at: tx.paid_at,
          created_at: tx.created_at,
          channel: 'card',
          currency: tx.currency,
          ip_address: null,
          metadata: tx.metadata ?? '',
          log: null,
          fees: null,
          fees_split: null,
          authorization: {},
          customer: {
            id: 181873746,
            first_name: null,
            last_name: null,
            email: tx.email,
            customer_code: 'CUS_1rkzaqsv4rrhqo6',
            phone: null,
            metadata: null,
            risk_action: 'default',
            international_format_phone: null,
          },
          plan: null,
          split: {},
          order_id: null,
          paidAt: tx.paid_at,
          createdAt: tx.created_at,
          requested_amount: tx.amount,
          pos_transaction_data: null,
          source: null,
          fees_breakdown: null,
          connect: null,
          transaction_date: tx.created_at,
          plan_object: {},
          subaccount: {},
        },
      },
    };
  }

  // ---- Refunds (POST /refund, GET /refund; webhooks refund.processed / refund.failed) ----

  /** The recorded POST /refund calls. */
  get refundCalls(): RecordedCall[] {
    return this.calls.filter((c) => c.method === 'POST' && c.path === '/refund');
  }

  /** Makes `reference` a paid transaction of `amount` (minor units), as a customer's payment would. */
  paid(reference: string, amount: number, currency = 'NGN'): void {
    this.transactions.set(reference, {
      id: this.#nextId++,
      reference,
      access_code: '',
      email: 'ada@example.com',
      amount,
      currency,
      metadata: null,
      callback_url: undefined,
      status: 'success',
      created_at: new Date().toISOString(),
      paid_at: new Date().toISOString(),
    });
  }

  /**
   * Settles refund `id` (`processed` or `failed`) and POSTs the signed event Paystack sends
   * (`refund.processed` / `refund.failed`: no id of the refund POST /refund returned, only the
   * charge's `transaction_reference`, a processor `refund_reference` and `amount` as a string)
   * to `<baseUrl>/api/notify?p=paystack`. Returns the HTTP status of our answer.
   */
  async sendRefundEvent(baseUrl: string, id: number, outcome: 'processed' | 'failed'): Promise<number> {
    const refund = this.refunds.get(id);
    if (!refund) throw new Error(`fake Paystack has no refund ${id}`);
    refund.status = outcome;
    const body = JSON.stringify({
      event: outcome === 'processed' ? 'refund.processed' : 'refund.failed',
      data: {
        status: outcome,
        transaction_reference: refund.transaction_reference,
        refund_reference: `13${String(id).padStart(10, '0')}`,
        amount: String(refund.amount),
        currency: refund.currency,
        processor: 'mpgs_zen',
        customer: { first_name: 'Ada', last_name: 'Obi', email: 'ada@example.com' },
        integration: 412829,
        domain: 'test',
      },
    });
    const response = await fetch(`${baseUrl}/api/notify?p=paystack`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-paystack-signature': signPaystack(body) },
      body,
    });
    await response.arrayBuffer();
    return response.status;
  }

  /**
   * Puts `count` refunds of other transactions on the account (made `at`, default now; each
   * on a paid transaction of its own, `processed`), as a busy merchant's would be: they fill
   * the pages of GET /refund. Recorded in the ledger as `preExisting`. Returns their ids.
   */
  seedRefunds(count: number, at: Date = new Date()): number[] {
    const ids: number[] = [];
    const createdAt = at.toISOString();
    for (let i = 0; i < count; i += 1) {
      const reference = `T-seed-${this.#nextId}`;
      this.paid(reference, 10_000);
      const refund: FakePaystackRefund = {
        id: this.#nextRefundId++,
        transaction_reference: reference,
        amount: 1000 + (i % 50),
        currency: 'NGN',
        merchant_note: i % 7 === 0 ? '' : `Order ${i} returned`,
        customer_note: '',
        status: 'processed',
        createdAt,
      };
      this.refunds.set(refund.id, refund);
      this.ledger.refunds.push({
        providerId: String(refund.id),
        payment: reference,
        amount: refund.amount,
        currency: 'NGN',
        marker: null,
        at: createdAt,
        preExisting: true,
      });
      ids.push(refund.id);
    }
    return ids;
  }

  /**
   * Dates the refunds `ids` (from seedRefunds) `at` (default now) and every other refund an
   * hour before it: a GET /refund window opened after that holds exactly those refunds and the
   * ones made since, whatever real time earlier work took.
   */
  redateRefunds(ids: ReadonlySet<number>, at: Date = new Date()): void {
    const seeded = at.toISOString();
    const earlier = new Date(at.getTime() - 3_600_000).toISOString();
    for (const refund of this.refunds.values()) refund.createdAt = ids.has(refund.id) ? seeded : earlier;
  }

  #refundRoute(call: RecordedCall): FakeAnswer {
    if (call.method === 'POST') return this.#createRefund(call.body);
    if (call.method === 'GET') return this.#listRefunds(new URL(call.path, 'http://fake').searchParams);
    return error(404, 'Not found');
  }

  #createRefund(body: Record<string, unknown>): FakeAnswer {
    const { transaction, amount, merchant_note, customer_note } = body;
    const tx = typeof transaction === 'string' ? this.transactions.get(transaction) : undefined;
    if (!tx) return error(404, 'Transaction not found', 'transaction_not_found');
    if (tx.status !== 'success')
      return error(400, 'Cannot refund a transaction that was not successful', 'invalid_params');
    const refunded = [...this.refunds.values()]
      .filter((r) => r.transaction_reference === tx.reference && r.status !== 'failed')
      .reduce((sum, r) => sum + r.amount, 0);
    const wanted = amount === undefined ? tx.amount - refunded : amount;
    if (!Number.isInteger(wanted) || (wanted as number) <= 0) return error(400, 'Invalid amount', 'invalid_params');
    if ((wanted as number) > tx.amount - refunded) {
      return error(400, 'Refund amount cannot be more than the unrefunded transaction amount', 'invalid_params');
    }
    const now = new Date().toISOString();
    const refund: FakePaystackRefund = {
      id: this.#nextRefundId++,
      transaction_reference: tx.reference,
      amount: wanted as number,
      currency: tx.currency,
      merchant_note: typeof merchant_note === 'string' ? merchant_note : '',
      customer_note: typeof customer_note === 'string' ? customer_note : '',
      status: 'pending',
      createdAt: now,
    };
    this.refunds.set(refund.id, refund);
    this.ledger.refunds.push({
      providerId: String(refund.id),
      payment: tx.reference,
      amount: refund.amount,
      currency: refund.currency,
      marker: markerOf(refund.merchant_note),
      at: now,
      preExisting: false,
    });
    return {
      status: 200,
      body: {
        status: true,
        message: 'Refund has been queued for processing',
        data: {
          transaction: {
            id: tx.id,
            domain: 'test',
            reference: tx.reference,
            amount: tx.amount,
            paid_at: tx.paid_at,
            channel: 'card',
            currency: tx.currency,
            authorization: { exp_month: null, exp_year: null, account_name: null },
            customer: { international_format_phone: null },
            plan: {},
            subaccount: { currency: null },
            split: {},
            order_id: null,
            paidAt: tx.paid_at,
            pos_transaction_data: null,
            source: null,
            fees_breakdown: null,
          },
          integration: 412829,
          deducted_amount: 0,
          channel: null,
          merchant_note: refund.merchant_note,
          customer_note: refund.customer_note,
          status: refund.status,
          refunded_by: 'billing@example.com',
          expected_at: new Date(Date.now() + 10 * 86_400_000).toISOString(),
          currency: refund.currency,
          domain: 'test',
          amount: refund.amount,
          fully_deducted: false,
          id: refund.id,
          createdAt: now,
          updatedAt: now,
        },
      },
    };
  }

  #listRefunds(query: URLSearchParams): FakeAnswer {
    const perPage = Number(query.get('perPage') ?? 50);
    const page = Math.max(Number(query.get('page') ?? 1), 1);
    const from = query.get('from');
    const to = query.get('to');
    // Newest first, as Paystack lists them (the id breaks ties: one order across pages).
    const all = [...this.refunds.values()]
      .filter((r) => (from === null || r.createdAt >= from) && (to === null || r.createdAt <= to))
      .sort((a, b) => b.createdAt.localeCompare(a.createdAt) || b.id - a.id);
    const items = all.slice((page - 1) * perPage, page * perPage).map((r) => ({
      integration: 412829,
      transaction: this.transactions.get(r.transaction_reference)?.id ?? 0,
      dispute: null,
      settlement: null,
      id: r.id,
      domain: 'test',
      currency: r.currency,
      amount: r.amount,
      status: r.status,
      refunded_at: r.status === 'processed' ? r.createdAt : null,
      refunded_by: 'billing@example.com',
      customer_note: r.customer_note,
      merchant_note: r.merchant_note,
      deducted_amount: 0,
      fully_deducted: 0,
      createdAt: r.createdAt,
      bank_reference: null,
      transaction_reference: r.transaction_reference,
      reason: r.merchant_note,
      customer: {
        id: 181873746,
        first_name: 'Ada',
        last_name: 'Obi',
        email: 'ada@example.com',
        customer_code: 'CUS_1rkzaqsv4rrhqo6',
        phone: null,
        metadata: '',
        risk_action: 'default',
        international_format_phone: '',
      },
      refund_type: 'partial',
      transaction_amount: this.transactions.get(r.transaction_reference)?.amount ?? 0,
      initiated_by: 'merchant',
      refund_channel: 'card',
      session_id: null,
      collect_account_number: false,
    }));
    return {
      status: 200,
      body: {
        status: true,
        message: 'Refunds retrieved',
        data: items,
        meta: {
          total: all.length,
          skipped: (page - 1) * perPage,
          perPage: String(perPage),
          page,
          pageCount: Math.max(Math.ceil(all.length / perPage), 1),
          failedRefundCount: all.filter((r) => r.status === 'failed').length,
        },
      },
    };
  }

  // ---- Charging (automatic collection): POST /transaction/charge_authorization ----
  // Shapes from PaystackOSS/openapi (TransactionChargeAuthorization → `{status, message, data}`
  // with data.status `success` / `failed`) and, for a charge that needs the customer, the
  // answer of Paystack's recurring-charges guide (PaystackOSS/doc-code-snippets
  // recurring-charges/two-factor.js): `data: {authorization_url, reference, access_code,
  // paused: true}`, no `data.status`. A charge is made (and counted) when the request
  // arrives, before any held answer is sent.

  /** What the next charges do, in order; then `defaultChargeOutcome`. */
  readonly chargeOutcomes: PaystackChargeOutcome[] = [];
  defaultChargeOutcome: PaystackChargeOutcome = 'success';
  /** Charges made per reference (a second charge of one reference is a double charge). */
  readonly chargesByReference = new Map<string, number>();
  /** Where sendChargeWebhook posts (our app), and the time its events carry. */
  webhookTarget: { url: string } | undefined;

  /** The recorded POST /transaction/charge_authorization calls. */
  get chargeCalls(): RecordedCall[] {
    return this.calls.filter((c) => c.method === 'POST' && c.path === '/transaction/charge_authorization');
  }

  /** Charges made for `reference` (0 when none). */
  chargeCount(reference: string): number {
    return this.chargesByReference.get(reference) ?? 0;
  }

  /** All charges made, over every reference. */
  get totalCharges(): number {
    let total = 0;
    for (const count of this.chargesByReference.values()) total += count;
    return total;
  }

  /**
   * POSTs the signed `charge.success` event of the successful transaction `reference` to
   * webhookTarget's /api/notify, as Paystack would. Returns the response status.
   */
  async sendChargeWebhook(reference: string): Promise<number> {
    const tx = this.transactions.get(reference);
    if (!tx || tx.status !== 'success') throw new Error(`fake Paystack has no successful transaction ${reference}`);
    if (!this.webhookTarget) throw new Error('fake Paystack has no webhookTarget');
    const event = paystackCharge({
      id: tx.id,
      reference: tx.reference,
      amount: tx.amount,
      currency: tx.currency,
      email: tx.email,
      metadata: tx.metadata,
    });
    const body = JSON.stringify(event);
    const response = await fetch(`${this.webhookTarget.url}/api/notify?p=paystack`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-paystack-signature': signPaystack(body) },
      body,
    });
    await response.arrayBuffer();
    return response.status;
  }

  #charge(body: Record<string, unknown>): FakeAnswer {
    const { email, amount, currency = 'NGN', reference, authorization_code, metadata } = body;
    if (typeof email !== 'string' || !email.includes('@'))
      return error(400, 'Invalid Email Address Passed', 'invalid_params');
    if (!Number.isInteger(amount) || (amount as number) <= 0)
      return error(400, 'Invalid Amount Sent', 'invalid_params');
    if (typeof authorization_code !== 'string' || !authorization_code.startsWith('AUTH_')) {
      return error(400, 'Invalid authorization code', 'invalid_params');
    }
    if (typeof currency !== 'string' || !CURRENCIES.includes(currency)) {
      return error(400, 'Currency not supported by merchant', 'unsupported_currency');
    }
    if (typeof reference !== 'string' || !REFERENCE.test(reference)) {
      return error(400, 'Invalid transaction reference', 'invalid_params');
    }
    if (this.transactions.has(reference)) return error(400, 'Duplicate Transaction Reference', 'duplicate_reference');
    const outcome = this.chargeOutcomes.shift() ?? this.defaultChargeOutcome;
    this.chargesByReference.set(reference, this.chargeCount(reference) + 1);
    const now = new Date().toISOString();
    const status = outcome === 'success' ? 'success' : outcome === 'paused' ? 'paused' : 'failed';
    const tx: FakePaystackTransaction = {
      id: this.#nextId++,
      reference,
      access_code: `acc_${Math.random().toString(36).slice(2, 12)}`,
      email,
      amount: amount as number,
      currency,
      metadata,
      callback_url: undefined,
      status,
      created_at: now,
      paid_at: status === 'success' ? now : null,
    };
    this.transactions.set(reference, tx);
    this.ledger.charges.push({ reference, providerId: String(tx.id), amount: tx.amount, currency, status, at: now });
    if (outcome === 'paused') {
      return {
        status: 200,
        body: {
          status: true,
          message: 'Please, redirect your customer to the authorization url provided',
          data: {
            authorization_url: `https://checkout.paystack.com/resume/${tx.access_code}`,
            reference,
            access_code: tx.access_code,
            paused: true,
          },
        },
      };
    }
    const gateway = outcome === 'success' ? 'Approved' : 'Insufficient Funds';
    return {
      status: 200,
      body: {
        status: true,
        message: 'Charge attempted',
        data: {
          amount: tx.amount,
          currency: tx.currency,
          transaction_date: now,
          status,
          reference,
          domain: 'test',
          metadata: tx.metadata ?? '',
          gateway_response: gateway,
          message: null,
          channel: 'card',
          ip_address: null,
          log: null,
          fees: status === 'success' ? Math.round(tx.amount * 0.015) : null,
          authorization: {
            authorization_code,
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
            account_name: null,
          },
          customer: {
            id: 181873746,
            first_name: null,
            last_name: null,
            email,
            customer_code: 'CUS_1rkzaqsv4rrhqo6',
            phone: null,
            metadata: null,
            risk_action: 'default',
          },
          plan: null,
          id: tx.id,
        },
      },
    };
  }
}
