// Idempotency keys (SPEC §2): a POST or PUT carrying `Idempotency-Key` runs once per
// (API key, Idempotency-Key) for 24 h; a retry gets the first response again with
// `Idempotent-Replayed: true`. The key is claimed after validation (a request refused as
// malformed is not stored, as at Stripe) and the response stored as it is sent, whatever
// produced it (route or error handler); 5xx responses are not stored.
import { createHash } from 'node:crypto';
import type {
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  onSendAsyncHookHandler,
  preHandlerAsyncHookHandler,
} from 'fastify';
import type { Kysely } from 'kysely';
import type { Database } from '../../db/database.ts';
import type { Clock } from '../../shared/clock.ts';
import {
  type Claim,
  claimIdempotencyKey,
  completeIdempotencyKey,
  releaseIdempotencyKey,
} from './idempotency.repository.ts';
import { AppError, ValidationError } from '../../http/errors.ts';
import { hookList } from '../../http/route.ts';

export const IDEMPOTENCY_HEADER = 'idempotency-key';
export const REPLAYED_HEADER = 'idempotent-replayed';
export const MAX_IDEMPOTENCY_KEY_LENGTH = 255;
/** How long a response is kept for replay (SPEC §2). */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
/**
 * How long a first attempt that never finished (its instance crashed) blocks retries with
 * 409. Longer than any request runs; after it, a retry runs the request again.
 */
export const IDEMPOTENCY_LEASE_MS = 60 * 1000;

const KEYED_METHODS = new Set(['POST', 'PUT']);

declare module 'fastify' {
  interface FastifyRequest {
    /** Set while this request owns an idempotency key; its response will be stored. */
    idempotencyClaim: Claim | undefined;
  }
}

/**
 * Deepest nesting of a body that is fingerprinted. No route's body comes near it; a deeper
 * one (routes without a body schema accept any JSON) is a 400, not a stack overflow (500).
 */
export const MAX_FINGERPRINT_DEPTH = 100;

/**
 * JSON with object keys sorted, so key order and whitespace do not change a fingerprint.
 * Throws ValidationError (400) for a body nested deeper than MAX_FINGERPRINT_DEPTH.
 */
function canonicalJson(value: unknown, depth = 0): string {
  if (depth > MAX_FINGERPRINT_DEPTH) {
    throw new ValidationError(`request body must not be nested more than ${MAX_FINGERPRINT_DEPTH} levels deep`);
  }
  if (Array.isArray(value)) return `[${value.map((item) => canonicalJson(item, depth + 1)).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.keys(value)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key], depth + 1)}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value) ?? '';
}

/**
 * Hex SHA-256 of method, path (with query) and body: what "the same request" means.
 * Throws ValidationError for a body nested deeper than MAX_FINGERPRINT_DEPTH.
 */
export function requestFingerprint(method: string, url: string, body: unknown): string {
  return createHash('sha256')
    .update(`${method} ${url}\n${body === undefined ? '' : canonicalJson(body)}`)
    .digest('hex');
}

/** The Idempotency-Key of a POST/PUT, checked (1–255 characters, else 400); undefined if none. */
function presentedIdempotencyKey(request: FastifyRequest): string | undefined {
  if (!KEYED_METHODS.has(request.method) || request.routeOptions.config.idempotency === false) return undefined;
  const value = request.headers[IDEMPOTENCY_HEADER];
  if (value === undefined) return undefined;
  const key = Array.isArray(value) ? value.join(', ') : value;
  if (key.length === 0 || key.length > MAX_IDEMPOTENCY_KEY_LENGTH) {
    throw new ValidationError(
      `Idempotency-Key must be 1 to ${MAX_IDEMPOTENCY_KEY_LENGTH} characters`,
      'Idempotency-Key',
    );
  }
  return key;
}

function replay(
  reply: FastifyReply,
  row: { response_status: number | null; response_content_type: string | null; response_body: string | null },
) {
  reply.code(row.response_status ?? 200).header(REPLAYED_HEADER, 'true');
  if (row.response_content_type) reply.type(row.response_content_type);
  // A string body with its content type goes out as stored: no serializer runs again.
  return reply.send(row.response_body === '' ? undefined : row.response_body);
}

/** The sent payload as text, or undefined when it cannot be stored (a stream). */
function payloadText(payload: unknown): string | undefined {
  if (payload === null || payload === undefined) return '';
  if (typeof payload === 'string') return payload;
  if (Buffer.isBuffer(payload)) return payload.toString('utf8');
  return undefined;
}

/**
 * Installs the idempotency hooks on `app` (root level, before any route): route-level hooks
 * on the POST/PUT routes only (a GET runs none of them). They act on authenticated requests
 * that carry the header; everything else passes untouched.
 * Errors: 400 `validation_error` for an empty or over-long key; 409 `idempotency_error`
 * when the key was used for another request or its first request is still running.
 */
export function registerIdempotency(app: FastifyInstance, deps: { db: Kysely<Database>; clock: Clock }): void {
  app.decorateRequest('idempotencyClaim', undefined);

  const claim: preHandlerAsyncHookHandler = async (request, reply) => {
    const principal = request.principal;
    if (!principal) return;
    const key = presentedIdempotencyKey(request);
    if (key === undefined) return;
    const fingerprint = requestFingerprint(request.method, request.url, request.body);
    const outcome = await claimIdempotencyKey(
      deps.db,
      { principalId: principal.id, key, fingerprint },
      { now: deps.clock.now(), ttlMs: IDEMPOTENCY_TTL_MS, leaseMs: IDEMPOTENCY_LEASE_MS },
    );
    switch (outcome.kind) {
      case 'claimed':
        request.idempotencyClaim = outcome.claim;
        return;
      case 'replay':
        return replay(reply, outcome.row);
      case 'mismatch':
        throw new AppError(
          'idempotency_error',
          'this Idempotency-Key was already used with a different request (method, path or body)',
        );
      case 'running':
        throw new AppError(
          'idempotency_error',
          'a request with this Idempotency-Key is still being processed; retry later',
        );
    }
  };

  const complete: onSendAsyncHookHandler = async (request, reply, payload) => {
    const claim = request.idempotencyClaim;
    if (!claim) return payload;
    request.idempotencyClaim = undefined;
    const body = payloadText(payload);
    try {
      if (reply.statusCode >= 500 || body === undefined) {
        await releaseIdempotencyKey(deps.db, claim);
      } else {
        const contentType = reply.getHeader('content-type');
        await completeIdempotencyKey(deps.db, claim, {
          status: reply.statusCode,
          contentType: typeof contentType === 'string' ? contentType : null,
          body,
        });
      }
    } catch (error) {
      // The response still goes out; the key stays `running` until its lease passes.
      request.log.error({ err: error }, 'could not store the idempotent response');
    }
    return payload;
  };

  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    if (!methods.some((method) => KEYED_METHODS.has(method)) || route.config?.idempotency === false) return;
    route.preHandler = [claim, ...hookList(route.preHandler)] as typeof route.preHandler;
    route.onSend = [complete, ...hookList(route.onSend)] as typeof route.onSend;
  });
}
