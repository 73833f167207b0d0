// The HTTP side of a webhook attempt: an undici Agent whose connector vets the destination
// on every new connection — IP literals as they are, names through the resolver — and then
// connects only to those vetted addresses (its `lookup` answers from them, so nothing is
// resolved twice and DNS rebinding has no window). No redirects, one deadline for the whole
// attempt, and at most 1 KiB of any response body is ever read.
import { isIP, type LookupFunction } from 'node:net';
import { Agent, buildConnector, request } from 'undici';
import { AllowedCidrs, UnsafeUrlError, vetHost } from './webhooks.url-safety.ts';
import type { WebhookNetwork } from './webhooks.network.ts';

/** Most bytes of a response body kept (and read) per attempt. */
export const RESPONSE_BODY_LIMIT = 1024;

export interface ClientOptions {
  network: WebhookNetwork;
  /** config.webhookAllowPrivateCidrs */
  allowPrivateCidrs: readonly string[];
  /** config.webhookTimeoutMs: the whole attempt (resolve, connect, TLS, response, body). */
  timeoutMs: number;
  /** Connections kept per origin (the per-endpoint concurrency). */
  connectionsPerOrigin: number;
}

export interface WebhookRequest {
  url: string;
  headers: Record<string, string>;
  body: string;
}

/** What one attempt came to. `statusCode` is null when no response arrived. */
export interface AttemptResponse {
  statusCode: number | null;
  /** Retry-After as sent, if any. */
  retryAfter: string | undefined;
  /** The first ≤ 1 KiB of the body, cut at a character boundary. */
  body: string | null;
  /** Why the attempt failed without a response (or the response was not acceptable). */
  error: string | null;
  /** True when the attempt was cut short by `signal` (shutdown), not by its own deadline. */
  aborted: boolean;
  durationMs: number;
}

/** UTF-8 text of `bytes` cut to ≤ `limit` bytes without splitting a character. */
export function truncateUtf8(bytes: Buffer, limit: number): string {
  let end = Math.min(bytes.length, limit);
  if (end < bytes.length) {
    // Step back over continuation bytes (10xxxxxx) to the start of the cut character.
    while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end -= 1;
  }
  return bytes.subarray(0, end).toString('utf8');
}

async function readLimited(body: AsyncIterable<Buffer> & { destroy(): void }): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of body) {
      chunks.push(chunk);
      size += chunk.length;
      if (size > RESPONSE_BODY_LIMIT) break; // leaving the loop destroys the stream
    }
  } catch {
    // A body cut off (reset, deadline) still leaves what arrived; the status is what counts.
  } finally {
    body.destroy();
  }
  return Buffer.concat(chunks);
}

const ERROR_WORDS: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset by the receiver',
  EPIPE: 'connection reset by the receiver',
  UND_ERR_SOCKET: 'connection closed by the receiver',
  UND_ERR_CONNECT_TIMEOUT: 'connect timed out',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  UND_ERR_RES_EXCEEDED_MAX_SIZE: 'response too large',
};

function describeError(error: unknown, timedOut: boolean, timeoutMs: number): string {
  if (timedOut) return `timed out after ${timeoutMs} ms`;
  if (error instanceof UnsafeUrlError) return `blocked: ${error.message}`;
  const cause = (error as { cause?: unknown })?.cause;
  if (cause instanceof UnsafeUrlError) return `blocked: ${cause.message}`;
  const code = String((error as { code?: unknown })?.code ?? (cause as { code?: unknown })?.code ?? '');
  if (ERROR_WORDS[code]) return ERROR_WORDS[code];
  if (/CERT|TLS|SSL|SELF_SIGNED|ALTNAME/.test(code)) return `TLS handshake failed (${code})`;
  if (code !== '') return `request failed (${code})`;
  return `request failed (${(error as Error)?.name ?? 'error'})`;
}

/**
 * Sends webhook requests. One per process (per worker); `close()` ends its connections.
 * Connections are reused per origin; each new one is vetted as described above.
 */
export class WebhookClient {
  readonly #agent: Agent;
  readonly #timeoutMs: number;

  constructor(options: ClientOptions) {
    this.#timeoutMs = options.timeoutMs;
    const allowed = new AllowedCidrs(options.allowPrivateCidrs);
    const { resolve } = options.network;
    // Addresses vetted for a host name, read by `lookup` when the socket connects. Every value
    // ever stored here was vetted, so a concurrent overwrite can only swap one safe set for another.
    const vetted = new Map<string, string[]>();
    const lookup: LookupFunction = (hostname, lookupOptions, callback) => {
      const family = lookupOptions.family === 4 || lookupOptions.family === 6 ? lookupOptions.family : 0;
      const addresses = (vetted.get(hostname) ?? []).filter((a) => family === 0 || isIP(a) === family);
      if (addresses.length === 0) {
        const error = Object.assign(new Error(`no vetted address for ${hostname}`), { code: 'ENOTFOUND' });
        callback(error, '', 0);
      } else if (lookupOptions.all) {
        callback(
          null,
          addresses.map((address) => ({ address, family: isIP(address) })),
        );
      } else {
        callback(null, addresses[0]!, isIP(addresses[0]!));
      }
    };
    const base = buildConnector({
      timeout: options.timeoutMs,
      lookup,
      ...(options.network.ca === undefined ? {} : { ca: options.network.ca }),
    });
    const withDeadline = <T>(promise: Promise<T>): Promise<T> =>
      new Promise<T>((resolvePromise, reject) => {
        const timer = setTimeout(() => reject(new Error('resolve timed out')), options.timeoutMs);
        promise.then(resolvePromise, reject).finally(() => clearTimeout(timer));
      });
    const connect: buildConnector.connector = (connectOptions, callback) => {
      const host = connectOptions.hostname;
      withDeadline(vetHost(host, connectOptions.protocol, resolve, allowed)).then(
        (addresses) => {
          if (isIP(host) === 0) vetted.set(host, addresses);
          base(connectOptions, callback);
        },
        (error: Error) => callback(error, null),
      );
    };
    this.#agent = new Agent({
      connect,
      connections: options.connectionsPerOrigin,
      pipelining: 1,
      // No redirect handling is installed: a 3xx is an answer, never followed (SPEC §6).
    });
  }

  /**
   * Sends one attempt and never throws: network failures, blocked addresses and the
   * deadline come back as `error`. `signal` aborts it early (shutdown).
   */
  async send(webhook: WebhookRequest, signal?: AbortSignal): Promise<AttemptResponse> {
    const started = performance.now();
    const deadline = AbortSignal.timeout(this.#timeoutMs);
    const combined = signal ? AbortSignal.any([deadline, signal]) : deadline;
    const finish = (partial: Omit<AttemptResponse, 'durationMs' | 'aborted'>): AttemptResponse => ({
      ...partial,
      aborted: signal?.aborted === true && !deadline.aborted,
      durationMs: Math.round(performance.now() - started),
    });
    try {
      const response = await request(webhook.url, {
        method: 'POST',
        headers: webhook.headers,
        body: webhook.body,
        dispatcher: this.#agent,
        signal: combined,
      });
      const bytes = await readLimited(response.body);
      const retryAfter = response.headers['retry-after'];
      const { statusCode } = response;
      return finish({
        statusCode,
        retryAfter: Array.isArray(retryAfter) ? retryAfter[0] : retryAfter,
        body: bytes.length === 0 ? null : truncateUtf8(bytes, RESPONSE_BODY_LIMIT),
        error: statusCode >= 300 && statusCode < 400 ? 'redirects are not followed' : null,
      });
    } catch (error) {
      return finish({
        statusCode: null,
        retryAfter: undefined,
        body: null,
        error: describeError(error, deadline.aborted, this.#timeoutMs),
      });
    }
  }

  /** Closes every connection (after in-flight requests end). */
  async close(): Promise<void> {
    await this.#agent.close();
  }
}
