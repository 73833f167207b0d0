// The HTTP part shared by the fake Paystack and fake Stripe (fake-paystack.ts, fake-stripe.ts):
// a real server on 127.0.0.1 at a free port that checks `Authorization: Bearer <key>`, records
// every request (method, path, headers, raw and decoded body), and answers through the
// provider's own handler unless a test queued something else for the next calls: an error
// status and body, or no answer at all (the request hangs until the server closes), to make
// the client's deadline pass.
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

/** A provider's routes: an answer for a request, given the decoded body. */
export type Handler = (call: RecordedCall) => FakeAnswer;

export class FakeProviderServer {
  readonly calls: RecordedCall[] = [];
  readonly #server: Server;
  readonly #overrides: Override[] = [];
  readonly #apiKey: string;
  readonly #decode: (raw: string, headers: IncomingHttpHeaders) => Record<string, unknown>;
  readonly #handle: Handler;
  readonly #unauthorized: FakeAnswer;
  #url = '';

  constructor(options: {
    apiKey: string;
    decode: (raw: string, headers: IncomingHttpHeaders) => Record<string, unknown>;
    handle: Handler;
    /** The provider's answer to a missing or wrong key. */
    unauthorized: FakeAnswer;
  }) {
    this.#apiKey = options.apiKey;
    this.#decode = options.decode;
    this.#handle = options.handle;
    this.#unauthorized = options.unauthorized;
    this.#server = createServer((request, response) => void this.#serve(request, response));
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
    t?.after(() => this.close());
    return this;
  }

  /** The next requests (one per item, in order) get these answers instead of the fake's own. */
  queue(...overrides: Override[]): void {
    this.#overrides.push(...overrides);
  }

  /** Stops the server, dropping connections (hung requests included). */
  async close(): Promise<void> {
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
    const override = this.#overrides.shift();
    if (override === 'hang') return; // answered never; closed with the server
    if (override === 'lost') {
      if (request.headers.authorization === `Bearer ${this.#apiKey}`) this.#handle(call);
      return; // acted on, answered never
    }
    const answer =
      override ??
      (request.headers.authorization === `Bearer ${this.#apiKey}` ? this.#handle(call) : this.#unauthorized);
    const text = JSON.stringify(answer.body);
    response.writeHead(answer.status, { 'content-type': 'application/json; charset=utf-8' }).end(text);
  }
}
