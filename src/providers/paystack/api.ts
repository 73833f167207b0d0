// Paystack's REST API (https://paystack.com/docs/api/, PaystackOSS/openapi), the calls
// collection makes: POST /transaction/initialize (a checkout link) and GET
// /transaction/verify/:reference (what happened to a reference). Plain undici, one keep-alive
// pool per process, `Authorization: Bearer <PAYSTACK_SECRET_KEY>`, one deadline per call
// (PROVIDER_TIMEOUT) that covers the answer's body too. Every answer is `{status, message,
// data}`; errors add `code`/`type`. Failures come back as ProviderCallError, never with the key.
import { Agent, request } from 'undici';
import { isObject, type JsonObject } from '../provider-values.ts';
import { type CallDeadlines, ProviderCallError, realTimeDeadlines, scrubProviderText } from '../provider-api.ts';

/** The most bytes of an answer read: Paystack's largest answers here are a few KiB. */
const MAX_ANSWER_BYTES = 1024 * 1024;

export interface PaystackApiOptions {
  /** PAYSTACK_API_URL, without a trailing slash. */
  baseUrl: string;
  /** PAYSTACK_SECRET_KEY (non-empty). */
  secretKey: string;
  /** PROVIDER_TIMEOUT in ms. */
  timeoutMs: number;
  /** Where each call's deadline comes from (default: real time). */
  deadlines?: CallDeadlines;
}

/** POST /transaction/initialize's body as we send it (SPEC §10). `amount` in minor units. */
export interface InitializeTransactionInput {
  email: string;
  amount: number;
  /** ISO 4217 upper case (Paystack: NGN, GHS, KES, ZAR, USD). */
  currency: string;
  /** Ours; letters, digits, `-`, `.`, `=` only. */
  reference: string;
  callback_url?: string;
  metadata: Record<string, string>;
}

/** `data` of a successful initialize: the page the customer pays on. */
export interface InitializedTransaction {
  authorization_url: string;
  access_code: string;
  reference: string;
}

/** What collection reads of a verified transaction (`data` of GET /transaction/verify/:reference). */
export interface VerifiedTransaction {
  reference: string;
  /** `success`, `failed`, `abandoned`, `ongoing`, `pending`, `reversed`, … */
  status: string;
  /** Minor units. */
  amount: number;
  currency: string;
  gateway_response: string | null;
  /** The whole `data` object, for callers that need more (authorization, customer). */
  data: JsonObject;
}

/** POST /refund's body as we send it (SPEC §10). `amount` in minor units. */
export interface CreateRefundInput {
  /** The transaction's reference (our payment's `provider_reference`). */
  transaction: string;
  amount: number;
  /** Carries our refund id, so a lookup after no usable answer can find the refund. */
  merchant_note: string;
}

/** The refund list's page size (its documented `perPage`). */
export const LOOKUP_PAGE_SIZE = 100;

/**
 * The most pages one look-up reads (10,000 refunds of the account in its window): beyond
 * that it proves nothing, and the refund stays unknown (SPEC §10).
 */
export const LOOKUP_MAX_PAGES = 100;

/**
 * The marker our refund id `refundId` makes at the end of a merchant_note: `[re_…]`. The note
 * is `<reason or Refund> [<refundId>]` (SPEC §10): a client's reason may name other refunds,
 * but only ours ends the note.
 */
export function merchantNoteOf(reason: string | null, refundId: string): string {
  return `${reason ?? 'Refund'} [${refundId}]`;
}

/** Our refund id at the very end of `note` (`… [re_…]`), or null: exact, never "contains". */
export function refundMarkerOf(note: unknown): string | null {
  return typeof note === 'string' ? (/\[(re_[0-9A-HJKMNP-TV-Z]{26})\]$/.exec(note)?.[1] ?? null) : null;
}

/** What refunds read of a Paystack refund (`data` of POST /refund, an item of GET /refund). */
export interface PaystackRefund {
  /** Paystack's refund id (an integer), as text. */
  id: string;
  /** `pending`, `processing`, `needs-attention`, `failed`, `processed`. */
  status: string;
  /** Minor units. */
  amount: number;
}

function refundOf(data: JsonObject): PaystackRefund | null {
  const id = typeof data.id === 'number' || typeof data.id === 'string' ? String(data.id) : '';
  if (id === '' || typeof data.amount !== 'number') return null;
  return { id, status: typeof data.status === 'string' ? data.status : '', amount: data.amount };
}

/** POST /transaction/charge_authorization's body as we send it (SPEC §10). `amount` in minor units. */
export interface ChargeAuthorizationInput {
  email: string;
  amount: number;
  /** The saved method's `AUTH_…` code: a secret, never logged. */
  authorization_code: string;
  /** ISO 4217 upper case. */
  currency: string;
  /** Ours (`pat-…`): the same on every retry of one attempt. */
  reference: string;
  metadata: Record<string, string>;
}

/**
 * `data` of an answered charge_authorization: `status` `success`, `failed`, or a step that
 * needs the customer (`paused`, `send_otp`, `send_pin`, `open_url`, …), or `pending`/`ongoing`
 * (not decided yet). A paused charge comes without `data.status` (see chargeAuthorization);
 * it is reported here as `status: 'paused'`.
 */
export interface AuthorizationCharge {
  status: string;
  reference: string;
  /** Paystack's transaction id, as text; null when absent. */
  id: string | null;
  /** Minor units. */
  amount: number;
  currency: string;
  gateway_response: string | null;
  /** Where the customer completes a paused charge. */
  authorization_url: string | null;
  /** Paystack's access code of a paused charge (its resume page); null otherwise. */
  access_code: string | null;
}

/** A client of Paystack's API. One per process; `close()` ends its connections. */
export class PaystackApi {
  readonly #options: PaystackApiOptions;
  readonly #agent = new Agent({ connections: 100, keepAliveTimeout: 10_000 });

  constructor(options: PaystackApiOptions) {
    this.#options = options;
  }

  /**
   * POST /transaction/initialize. Returns `data` (authorization_url, access_code, reference).
   * Throws ProviderCallError: `refused` with Paystack's message (e.g. a duplicate reference),
   * `unauthorized`, `timeout` or `unavailable`.
   */
  async initializeTransaction(input: InitializeTransactionInput): Promise<InitializedTransaction> {
    const { status, body } = await this.#call('POST', '/transaction/initialize', input);
    const data = isObject(body) && body.status === true && isObject(body.data) ? body.data : undefined;
    if (
      status !== 200 ||
      !data ||
      typeof data.authorization_url !== 'string' ||
      !/^https?:\/\//.test(data.authorization_url)
    ) {
      throw this.#failure(status, body, 'initialize the transaction');
    }
    return {
      authorization_url: data.authorization_url,
      access_code: typeof data.access_code === 'string' ? data.access_code : '',
      reference: typeof data.reference === 'string' ? data.reference : input.reference,
    };
  }

  /**
   * GET /transaction/verify/:reference. Returns the transaction, or null when Paystack has
   * none with this reference (404). Throws ProviderCallError otherwise.
   */
  async verifyTransaction(reference: string): Promise<VerifiedTransaction | null> {
    const { status, body } = await this.#call('GET', `/transaction/verify/${encodeURIComponent(reference)}`);
    if (status === 404) return null;
    const data = isObject(body) && body.status === true && isObject(body.data) ? body.data : undefined;
    if (status !== 200 || !data || typeof data.status !== 'string' || typeof data.amount !== 'number') {
      throw this.#failure(status, body, 'verify the transaction');
    }
    return {
      reference: typeof data.reference === 'string' ? data.reference : reference,
      status: data.status,
      amount: data.amount,
      currency: typeof data.currency === 'string' ? data.currency : '',
      gateway_response: typeof data.gateway_response === 'string' ? data.gateway_response : null,
      data,
    };
  }

  // ---- Refunds (SPEC §10 "Refunds from the API"; PaystackOSS/openapi RefundCreate,
  // RefundCreateResponse, RefundListResponse) ----

  /**
   * POST /refund `{transaction, amount, merchant_note}`: a refund of `amount` (minor units) of
   * the transaction `transaction` (its reference). Paystack has no idempotency here: whoever
   * retries after no usable answer looks the refund up first (findRefund). Returns the refund's
   * id (a number, as text) and status (`pending`, `processing`, `processed`, …). Throws
   * ProviderCallError (`refused` with Paystack's message, `unauthorized`, `timeout`, `unavailable`).
   */
  async createRefund(input: CreateRefundInput): Promise<PaystackRefund> {
    const { status, body } = await this.#call('POST', '/refund', input);
    const data = isObject(body) && body.status === true && isObject(body.data) ? body.data : undefined;
    const refund = data ? refundOf(data) : null;
    if (status !== 200 || !refund) throw this.#failure(status, body, 'create the refund');
    return refund;
  }

  /**
   * The refund of transaction `transactionReference` that carries our refund id `refundId` as
   * its marker (merchant_note ending in `[<refundId>]`, refundMarker), among those Paystack
   * lists between `window.from` and `window.to` (ISO 8601): GET /refund
   * `?from&to&perPage=100&page` (the documented list, which takes no transaction filter),
   * every page read. Returns null only when absence is PROVEN: every page up to
   * `meta.pageCount` answered, the same `meta.total` on each, and as many refunds seen as that
   * total. Anything less (a page that fails, a total that moves, more than
   * LOOKUP_MAX_PAGES pages) proves nothing: throws ProviderCallError `unavailable` (outcome
   * unknown), so the caller sends nothing. SPEC §10 "Refunds from the API".
   */
  async findRefund(
    transactionReference: string,
    refundId: string,
    window: { from: string; to: string },
  ): Promise<PaystackRefund | null> {
    const unproven = (why: string) =>
      new ProviderCallError(
        'paystack',
        'unavailable',
        `Paystack's refund list cannot tell whether ${refundId} was made: ${why}`,
      );
    let total: number | null = null;
    let seen = 0;
    for (let page = 1; ; page += 1) {
      const query = new URLSearchParams({ ...window, perPage: String(LOOKUP_PAGE_SIZE), page: String(page) });
      const { status, body } = await this.#call('GET', `/refund?${query}`);
      const items = isObject(body) && body.status === true && Array.isArray(body.data) ? body.data : undefined;
      if (status !== 200 || !items) {
        const failure = this.#failure(status, body, 'list refunds');
        // A refused or unauthorized list says nothing about the refund either.
        throw failure.outcomeUnknown ? failure : unproven(failure.message);
      }
      const meta = isObject(body) && isObject(body.meta) ? body.meta : {};
      const pageTotal = meta.total;
      const pageCount = meta.pageCount;
      if (!Number.isSafeInteger(pageTotal) || !Number.isSafeInteger(pageCount))
        throw unproven('no meta.total/pageCount');
      if (total === null) {
        total = pageTotal as number;
        if ((pageCount as number) > LOOKUP_MAX_PAGES) {
          throw unproven(`${total} refunds listed since ${window.from}, more than ${LOOKUP_MAX_PAGES} pages`);
        }
      } else if (pageTotal !== total) {
        throw unproven('the list changed while it was read');
      }
      for (const item of items) {
        seen += 1;
        if (!isObject(item) || item.transaction_reference !== transactionReference) continue;
        if (refundMarkerOf(item.merchant_note) !== refundId) continue;
        const refund = refundOf(item);
        if (!refund) throw unproven('its refund has no id');
        return refund;
      }
      if (page >= (pageCount as number) || items.length === 0) break;
    }
    if (seen !== total) throw unproven(`${seen} of ${total} refunds listed`);
    return null;
  }

  /**
   * POST /transaction/charge_authorization: charges a saved authorization. A decline is an
   * answer (`status: failed`), not an error. A charge the customer must complete answers
   * `data: {authorization_url, reference, access_code, paused: true}` without `data.status`
   * (Paystack's recurring-charges guide: "check data.paused"); it is returned as `status:
   * 'paused'` with its `authorization_url`. Throws ProviderCallError: `refused` (e.g. an
   * invalid authorization code, a duplicate reference), `unauthorized`, `timeout`, `unavailable`.
   */
  async chargeAuthorization(input: ChargeAuthorizationInput): Promise<AuthorizationCharge> {
    const { status, body } = await this.#call('POST', '/transaction/charge_authorization', input);
    const data = isObject(body) && body.status === true && isObject(body.data) ? body.data : undefined;
    const paused = data?.paused === true;
    if (status !== 200 || !data || (!paused && typeof data.status !== 'string')) {
      throw this.#failure(status, body, 'charge the authorization');
    }
    return {
      status: paused ? 'paused' : (data.status as string),
      reference: typeof data.reference === 'string' ? data.reference : input.reference,
      id: typeof data.id === 'number' || typeof data.id === 'string' ? String(data.id) : null,
      amount: typeof data.amount === 'number' ? data.amount : input.amount,
      currency: typeof data.currency === 'string' ? data.currency : input.currency,
      gateway_response: typeof data.gateway_response === 'string' ? data.gateway_response : null,
      authorization_url:
        typeof data.authorization_url === 'string' && /^https?:\/\//.test(data.authorization_url)
          ? data.authorization_url
          : null,
      access_code: typeof data.access_code === 'string' && data.access_code !== '' ? data.access_code : null,
    };
  }

  /** Closes the connection pool (after in-flight calls end). */
  async close(): Promise<void> {
    await this.#agent.close();
  }

  /** One call: the status and the parsed JSON body (undefined when not JSON). */
  async #call(method: 'GET' | 'POST', path: string, json?: unknown): Promise<{ status: number; body: unknown }> {
    const { baseUrl, secretKey, timeoutMs, deadlines = realTimeDeadlines } = this.#options;
    const { signal: deadline, end } = deadlines.start(timeoutMs);
    try {
      const response = await request(`${baseUrl}${path}`, {
        method,
        dispatcher: this.#agent,
        signal: deadline,
        headers: {
          authorization: `Bearer ${secretKey}`,
          accept: 'application/json',
          ...(json === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: json === undefined ? undefined : JSON.stringify(json),
      });
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of response.body as AsyncIterable<Buffer>) {
        size += chunk.length;
        if (size > MAX_ANSWER_BYTES) {
          response.body.destroy();
          throw new ProviderCallError('paystack', 'unavailable', 'Paystack sent an answer over 1 MiB', {
            providerStatus: response.statusCode,
          });
        }
        chunks.push(chunk);
      }
      let body: unknown;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        body = undefined;
      }
      return { status: response.statusCode, body };
    } catch (error) {
      if (error instanceof ProviderCallError) throw error;
      if (deadline.aborted) {
        throw new ProviderCallError('paystack', 'timeout', `Paystack did not answer within ${timeoutMs} ms`);
      }
      const code = String((error as { code?: unknown })?.code ?? '');
      throw new ProviderCallError(
        'paystack',
        'unavailable',
        `Paystack could not be reached${/^[A-Z_]+$/.test(code) ? ` (${code})` : ''}`,
      );
    } finally {
      end();
    }
  }

  /** The ProviderCallError for a non-successful answer: status → failure, Paystack's message scrubbed. */
  #failure(status: number, body: unknown, action: string): ProviderCallError {
    const said = isObject(body) ? scrubProviderText(body.message, [this.#options.secretKey]) : '';
    const code = isObject(body) && typeof body.code === 'string' ? scrubProviderText(body.code, []) : null;
    const options = { providerStatus: status, providerCode: code };
    if (status === 401 || status === 403) {
      return new ProviderCallError(
        'paystack',
        'unauthorized',
        `Paystack refused PAYSTACK_SECRET_KEY (HTTP ${status})`,
        options,
      );
    }
    if (status >= 400 && status < 500 && status !== 429) {
      const reason = said === '' ? `HTTP ${status}` : said;
      return new ProviderCallError('paystack', 'refused', `Paystack refused to ${action}: ${reason}`, options);
    }
    const what = status >= 200 && status < 300 ? 'an answer it could not read' : `HTTP ${status}`;
    return new ProviderCallError('paystack', 'unavailable', `Paystack could not ${action} (${what})`, options);
  }
}
