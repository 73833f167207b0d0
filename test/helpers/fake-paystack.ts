// A fake Paystack API for tests (shapes from PaystackOSS/openapi: TransactionInitialize,
// TransactionInitializeResponse, VerifyResponse, the Error model): POST /transaction/initialize
// and GET /transaction/verify/:reference, `Authorization: Bearer <secret key>` checked, every
// call recorded, errors and timeouts on demand (FakeProviderServer.queue).
import type { TestContext } from 'node:test';
import { FakeProviderServer, type FakeAnswer, type RecordedCall } from './fake-provider.ts';
import { PAYSTACK_SECRET } from './provider-events.ts';

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

export class FakePaystack extends FakeProviderServer {
  readonly transactions = new Map<string, FakePaystackTransaction>();
  #nextId = 4_099_260_516;

  constructor(secretKey = PAYSTACK_SECRET) {
    super({
      apiKey: secretKey,
      decode: (raw) => JSON.parse(raw) as Record<string, unknown>,
      handle: (call) => this.#route(call),
      unauthorized: error(401, 'Invalid key'),
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
}
