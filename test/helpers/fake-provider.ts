// The HTTP part shared by the fake Paystack and fake Stripe (fake-paystack.ts, fake-stripe.ts):
// a real server on 127.0.0.1 at a free port that checks `Authorization: Bearer <key>`, records
// every request (method, path, headers, raw and decoded body), and answers through the
// provider's own handler unless a test queued something else for the next calls: an error
// status and body, or no answer at all (the request hangs until the server closes), to make
// the client's deadline pass. Each fake keeps a LEDGER (ProviderLedger): every charge and
// refund it accepted, whatever became of the HTTP answer, so a test (or a property over
// random histories) compares what the provider did with what we recorded; and faults can be
// aimed at a route (inject): lose the answer after acting, answer 500, or time out.
import { once } from 'node:events';
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TestContext } from 'node:test';
import { afterTest } from './after.ts';
import type { UnansweredRequests } from './provider-deadlines.ts';

export interface RecordedCall {
  method: string;
  /** Path and query, as sent. */
  path: string;
  headers: IncomingHttpHeaders;
  /** The raw body text. */
  raw: string;
  /** The body decoded by the fake (JSON for Paystack, form encoding for Stripe). */
  body: Record<string, unknown>;
}

export interface FakeAnswer {
  status: number;
  body: unknown;
}

/**
 * What the next request gets instead of the fake's own answer: an answer, `'hang'` (never
 * answered, nothing done), or `'lost'` (the provider acts on it — the fake's own handler runs —
 * but the answer never arrives: a timeout after the fact, the case exactly-once is about).
 */
export type Override = FakeAnswer | 'hang' | 'lost';

/**
 * A fault the fake plays on a request instead of answering normally (inject()):
 * - `timeout`: nothing is done and no answer comes (the client's PROVIDER_TIMEOUT passes);
 * - `error`: nothing is done; the answer is a 500 with the provider's error body;
 * - `lose`: the provider acts (a charge or refund lands in the ledger) and no answer comes;
 * - `lose-error`: the provider acts, then answers 500 (the client cannot tell it acted).
 */
export type Fault = 'timeout' | 'error' | 'lose' | 'lose-error';

/**
 * Which requests a fault is for: a method and a path — exact (the query aside), a prefix
 * ending in `*` (`/refund*` takes the list's `/refund?…` too), or a RegExp on path and query.
 */
export interface FaultTarget {
  method?: string;
  path?: string | RegExp;
}

/** A charge a fake provider made (a transaction / PaymentIntent it created, whatever its outcome). */
export interface LedgerCharge {
  /** Ours: Paystack's `reference`, Stripe's Idempotency-Key (null when none was sent). */
  reference: string | null;
  /** The provider's id of it (Paystack transaction id, Stripe `pi_…`), as text. */
  providerId: string;
  /** Minor units. */
  amount: number;
  /** ISO 4217 upper case. */
  currency: string;
  /** As the provider said: Paystack `success`/`failed`/`paused`, Stripe `succeeded`/`requires_payment_method`. */
  status: string;
  /** Real time (ISO 8601) it was made. */
  at: string;
}

/** A refund a fake provider accepted, or one already on the account (`preExisting`). */
export interface LedgerRefund {
  /** The provider's id (Paystack's integer as text, Stripe `re_…`). */
  providerId: string;
  /** The refunded payment: Paystack transaction reference, Stripe PaymentIntent. */
  payment: string;
  /** Minor units. */
  amount: number;
  /** ISO 4217 upper case. */
  currency: string;
  /**
   * Our refund id (`re_…`) as the request carried it: Paystack the trailing `[re_…]` of
   * merchant_note, Stripe metadata.refund_id; null when none.
   */
  marker: string | null;
  /** Real time (ISO 8601) it was made. */
  at: string;
  /** Seeded before the test (the account's other refunds), not made by a request of ours. */
  preExisting: boolean;
}

/**
 * What a fake provider did, in acceptance order: `charges` and `refunds` (seeded refunds
 * included, flagged). The truth tests compare our records with, whatever answers were lost:
 * "one refund at the provider per refund of ours" is `refundsWithMarker(id).length === 1`.
 * Statuses live on the fakes' own maps (they change when a test settles them).
 */
export class ProviderLedger {
  readonly charges: LedgerCharge[] = [];
  readonly refunds: LedgerRefund[] = [];

  /** Refunds carrying our refund id `marker`. */
  refundsWithMarker(marker: string): LedgerRefund[] {
    return this.refunds.filter((refund) => refund.marker === marker);
  }

  /** Charges made under our reference `reference`. */
  chargesWithReference(reference: string): LedgerCharge[] {
    return this.charges.filter((charge) => charge.reference === reference);
  }

  /** Refunds made on `payment` (Paystack transaction reference, Stripe PaymentIntent). */
  refundsOn(payment: string): LedgerRefund[] {
    return this.refunds.filter((refund) => refund.payment === payment);
  }
}

/** Our refund id at the end of a Paystack merchant_note (`… [re_…]`), or null. */
export function markerOf(note: unknown): string | null {
  return typeof note === 'string' ? (/\[(re_[0-9A-Z]{26})\]$/.exec(note)?.[1] ?? null) : null;
}

/** A provider's routes: an answer for a request, given the decoded body. */
export type Handler = (call: RecordedCall) => FakeAnswer | Promise<FakeAnswer>;

export class FakeProviderServer {
  readonly calls: RecordedCall[] = [];
  readonly #server: Server;
  readonly #overrides: Override[] = [];
  readonly #apiKey: string;
  readonly #decode: (raw: string, headers: IncomingHttpHeaders) => Record<string, unknown>;
  readonly #handle: Handler;
  readonly #unauthorized: FakeAnswer;
  readonly #serverError: FakeAnswer;
  readonly #faults: { fault: Fault | FakeAnswer; target: FaultTarget; remaining: number }[] = [];
  /** What this provider did (charges, refunds): see ProviderLedger. */
  readonly ledger = new ProviderLedger();
  #url = '';

  constructor(options: {
    apiKey: string;
    decode: (raw: string, headers: IncomingHttpHeaders) => Record<string, unknown>;
    handle: Handler;
    /** The provider's answer to a missing or wrong key. */
    unauthorized: FakeAnswer;
    /** The provider's 500 answer (inject's `error` and `lose-error`). */
    serverError: FakeAnswer;
  }) {
    this.#apiKey = options.apiKey;
    this.#decode = options.decode;
    this.#handle = options.handle;
    this.#unauthorized = options.unauthorized;
    this.#serverError = options.serverError;
    this.#server = createServer((request, response) => void this.#serve(request, response));
  }

  /**
   * Plays `fault` on the next `times` requests matching `target` (default: any request)
   * instead of the normal answer; faults are matched in the order injected, before queue()'s
   * overrides (a request a fault takes leaves the queue alone). E.g.
   * `inject('lose', {method: 'POST', path: '/refund'})`: Paystack makes the refund and its
   * answer never arrives. A FakeAnswer instead of a fault is answered as it is (nothing done).
   */
  inject(fault: Fault | FakeAnswer, target: FaultTarget = {}, times = 1): void {
    this.#faults.push({ fault, target, remaining: times });
  }

  /** Drops the faults not played yet. */
  clearFaults(): void {
    this.#faults.length = 0;
  }

  #takeFault(call: RecordedCall): Fault | FakeAnswer | undefined {
    const index = this.#faults.findIndex(({ target }) => {
      if (target.method !== undefined && target.method !== call.method) return false;
      const { path } = target;
      if (path === undefined) return true;
      if (path instanceof RegExp) return path.test(call.path);
      return path.endsWith('*') ? call.path.startsWith(path.slice(0, -1)) : call.path.split('?')[0] === path;
    });
    if (index < 0) return undefined;
    const entry = this.#faults[index]!;
    entry.remaining -= 1;
    if (entry.remaining <= 0) this.#faults.splice(index, 1);
    return entry.fault;
  }

  /** `http://127.0.0.1:<port>` once started. */
  get url(): string {
    return this.#url;
  }

  /** Listens on 127.0.0.1 at a free port; closes on `t.after` when given. */
  async start(t?: TestContext): Promise<this> {
    this.#server.listen(0, '127.0.0.1');
    await once(this.#server, 'listening');
    this.#url = `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
    if (t) afterTest(t, () => this.close());
    return this;
  }

  /** The next requests (one per item, in order) get these answers instead of the fake's own. */
  queue(...overrides: Override[]): void {
    this.#overrides.push(...overrides);
  }

  // ---- Charging (automatic collection): latency and held answers ----

  /** Milliseconds every answer waits after the fake acted (the bench's provider latency). */
  latencyMs = 0;
  /** Answers currently held back by hold(). */
  heldCount = 0;
  /** Resolves true when the held answers are sent, false when they are lost (loseAnswers()). */
  #held: { promise: Promise<boolean>; resolve: (send: boolean) => void } | undefined;
  #losing = false;

  /**
   * From now on the fake acts on each request (a charge is made) but holds its answer back
   * until release(): a client waiting for it can be killed in between.
   */
  hold(): void {
    if (this.#held) return;
    let resolve = (_send: boolean) => {};
    const promise = new Promise<boolean>((done) => (resolve = done));
    this.#held = { promise, resolve };
  }

  /**
   * The answers held so far, and every answer from now until release(), are lost: the fake
   * acts on each request and never answers it (the client's call times out).
   */
  loseAnswers(): void {
    this.#losing = true;
    this.#held?.resolve(false);
    this.#held = undefined;
  }

  /** Sends the answers hold() kept back, and answers at once again. */
  release(): void {
    this.#losing = false;
    this.#held?.resolve(true);
    this.#held = undefined;
  }

  /**
   * Told of each request this fake leaves unanswered (a `timeout` or `lose` fault, a `hang`
   * or `lost` override), so the client's deadline need not wait PROVIDER_TIMEOUT out in real
   * time (provider-deadlines.ts; appWithFakeProviders sets it).
   */
  unansweredTo: UnansweredRequests | undefined;

  /** Stops the server, dropping connections (hung requests included). */
  async close(): Promise<void> {
    this.release();
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  async #serve(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks).toString('utf8');
    let body: Record<string, unknown>;
    try {
      body = raw === '' ? {} : this.#decode(raw, request.headers);
    } catch {
      body = {};
    }
    const call: RecordedCall = {
      method: request.method ?? '',
      path: request.url ?? '',
      headers: request.headers,
      raw,
      body,
    };
    this.calls.push(call);
    const authorized = request.headers.authorization === `Bearer ${this.#apiKey}`;
    const fault = this.#takeFault(call);
    const override = fault === undefined ? this.#overrides.shift() : undefined;
    if (fault === 'timeout' || override === 'hang') {
      this.#leaveUnanswered(response); // answered never; closed with the server
      return;
    }
    if (fault === 'lose' || override === 'lost') {
      if (authorized) await this.#handle(call);
      this.#leaveUnanswered(response); // acted on, answered never
      return;
    }
    let answer: FakeAnswer;
    if (typeof fault === 'object') answer = fault;
    else if (fault === 'error') answer = this.#serverError;
    else if (fault === 'lose-error') {
      if (authorized) await this.#handle(call);
      answer = this.#serverError;
    } else answer = override ?? (authorized ? await this.#handle(call) : this.#unauthorized);
    // Charging (automatic collection tests): the provider has acted; its answer waits.
    if (this.latencyMs > 0) await new Promise((resolve) => setTimeout(resolve, this.latencyMs));
    let lost = this.#losing;
    if (this.#held !== undefined) {
      this.heldCount += 1;
      lost = !(await this.#held.promise);
    }
    if (lost) {
      this.#leaveUnanswered(response); // acted on, answered never
      return;
    }
    if (request.socket.destroyed) return;
    const text = JSON.stringify(answer.body);
    response.writeHead(answer.status, { 'content-type': 'application/json; charset=utf-8' }).end(text);
  }

  #leaveUnanswered(response: ServerResponse): void {
    const closed = response.destroyed ? Promise.resolve() : once(response, 'close').then(() => {});
    this.unansweredTo?.unanswered(closed);
  }
}
