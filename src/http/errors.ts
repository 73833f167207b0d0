// Errors are a closed set of codes (SPEC §2's), each with its status in ONE
// table (ERROR_STATUS). Services throw AppError or a named subclass; this module alone turns
// any error into a response body (errorResponse) and sends it (sendError).
import type { Duplex } from 'node:stream';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { validationMessage } from './validation-messages.ts';

/**
 * Every error code (SPEC §2) and the HTTP status it answers with. A code is thrown with its
 * status from here; the few codes with a second status have a named subclass below
 * (StateConflictError, ServiceUnavailableError), so no throw picks a status of its own.
 */
export const ERROR_STATUS = {
  validation_error: 400,
  authentication_error: 401,
  permission_error: 403,
  not_found: 404,
  conflict: 409,
  idempotency_error: 409,
  invalid_state: 422,
  rate_limit_error: 429,
  internal_error: 500,
} as const;
export type ErrorCode = keyof typeof ERROR_STATUS;
/** The closed set of codes, in SPEC §2's order (the `Error` schema's enum). */
export const ERROR_CODES = Object.keys(ERROR_STATUS) as readonly ErrorCode[];

/**
 * A failure the client can act on: `code` one of ERROR_CODES, `status` the code's HTTP status
 * from ERROR_STATUS (a subclass may answer a code's second status), `details` the envelope's.
 */
export class AppError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly details: unknown;

  constructor(code: ErrorCode, message: string, details: unknown = null) {
    super(message);
    this.name = 'AppError';
    this.code = code;
    this.status = ERROR_STATUS[code];
    this.details = details;
  }
}

/** 404 `not_found` naming the missing resource, e.g. `customer cus_… not found`. */
export class NotFoundError extends AppError {
  constructor(resource: string, id: string) {
    super('not_found', `${resource} ${id} not found`);
  }
}

/** A request-validation failure (400, SPEC §2 two-shape body). `field` is the offending field, if any. */
export class ValidationError extends AppError {
  readonly field: string | undefined;
  constructor(message: string, field?: string) {
    super('validation_error', message);
    this.field = field;
  }
}

/**
 * 409 `validation_error`: the request is well-formed but the resource's state refuses it
 * ("subscription cannot be cancelled in its current state", SPEC §4). The seed's body keeps
 * the `validation_error` code; the status says it is a state conflict, not a bad field.
 */
export class StateConflictError extends AppError {
  override readonly status = 409;
  constructor(message: string) {
    super('validation_error', message);
  }
}

/**
 * 503 `internal_error`: the service is draining for shutdown and serves no new request; the
 * client (or load balancer) retries it elsewhere.
 */
export class ServiceUnavailableError extends AppError {
  override readonly status = 503;
  constructor(message: string) {
    super('internal_error', message);
  }
}

/**
 * 503 `internal_error`: a payment provider gave no usable answer (timeout, 5xx, unreachable;
 * SPEC §10). SPEC §2 allows no 502/504, and 503 already means "retry later": nothing the
 * client asked for was done, and the same request can be sent again. `details` says which
 * provider and why (docs/SPEC.md §10).
 */
export class ProviderUnavailableError extends AppError {
  override readonly status = 503;
  constructor(message: string, details: unknown) {
    super('internal_error', message, details);
  }
}

/**
 * The SPEC §2 400 body: the envelope and the problem-details shape at once, so clients
 * of either keep working. `errors` lists each offending field with the reason.
 */
export function validationBody(message: string, errors: { name: string; reason: string }[]) {
  return {
    code: 'validation_error',
    message,
    details: null,
    status: 400,
    title: 'Bad Request',
    detail: message,
    errors,
  };
}

function envelope(code: ErrorCode, message: string, details: unknown = null) {
  return { code, message, details };
}

/** Maps Fastify's own client errors (body parsing, limits) to our codes. */
function fromFastifyError(error: FastifyError): { status: number; body: object } | undefined {
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return { status: 413, body: envelope('validation_error', 'request body must not exceed 1 MiB') };
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return {
        status: 415,
        body: envelope('validation_error', 'request body must be JSON (Content-Type: application/json)'),
      };
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return { status: 400, body: validationBody('Content-Length does not match the body', []) };
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return { status: 400, body: validationBody('request body is not valid JSON', []) };
    // The router's refusals (see routeFrameworkErrors). Their own messages quote the raw
    // path; ours never do.
    case 'FST_ERR_BAD_URL':
      return {
        status: 400,
        body: validationBody('the request path is not a valid URL (malformed percent-encoding)', []),
      };
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return { status: 400, body: validationBody('a segment of the request path is too long', []) };
  }
  if (error.validation) {
    const { message, field } = validationMessage(error.validation, error.validationContext);
    return {
      status: 400,
      body: validationBody(message, field === undefined ? [] : [{ name: field, reason: message }]),
    };
  }
  return undefined;
}

/** The response for any thrown error: status and body. Unknown errors become a bare 500. */
export function errorResponse(error: unknown): { status: number; body: object } {
  if (error instanceof ValidationError) {
    const errors = error.field === undefined ? [] : [{ name: error.field, reason: error.message }];
    return { status: 400, body: validationBody(error.message, errors) };
  }
  if (error instanceof AppError) {
    // Every 400 carries both shapes (SPEC §2), whichever service raised it.
    if (error.status === 400) return { status: 400, body: validationBody(error.message, []) };
    return { status: error.status, body: envelope(error.code, error.message, error.details) };
  }
  const fastifyError = error as FastifyError;
  const mapped = fromFastifyError(fastifyError);
  if (mapped) return mapped;
  const status = fastifyError?.statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    // Any other client error Fastify raised: keep its status, never its internal text.
    return {
      status,
      body:
        status === 400 ? validationBody('malformed request', []) : envelope('validation_error', 'malformed request'),
    };
  }
  return { status: 500, body: envelope('internal_error', 'internal server error') };
}

/**
 * A path no route has: a request the router refused is routed again here, so it reaches
 * the not-found handler, and through it the one error handler, like any other request.
 */
const REFUSED_URL_PATH = '/.refused-by-router';
const ROUTER_ERROR = Symbol('routerError');
type RefusedRequest = FastifyRequest['raw'] & { [ROUTER_ERROR]?: FastifyError };

/**
 * Fastify's `frameworkErrors` option. The router refuses some requests before any route,
 * hook or error handler exists for them (a path with malformed percent-encoding, a path
 * parameter over `maxParamLength`) and would answer them itself: its own body shape, the raw
 * path echoed, no security headers, no X-Request-Id. Instead the refusal is remembered on
 * the raw request and the request is routed again to REFUSED_URL_PATH, where the not-found
 * handler rethrows it: the answer then takes the app's whole path (every onRequest/onSend
 * hook, the one error handler, the envelope).
 *
 * A refused path under one of `pagePrefixes` (plugin prefixes with their own not-found
 * handler, e.g. the hosted invoice pages' `/i`, which answer HTML) is routed again to
 * `<prefix>/.refused-by-router/` instead, a path no route there has, so that prefix's
 * not-found handler answers it in its own form.
 */
export function routeFrameworkErrorsUnder(pagePrefixes: readonly string[]) {
  return function routeFrameworkErrors(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
    const raw = request.raw as RefusedRequest;
    if (raw[ROUTER_ERROR]) {
      // Routing again failed too (cannot happen for REFUSED_URL_PATH): answer plainly, never loop.
      reply.code(400).type('application/json; charset=utf-8').send(validationBody('malformed request', []));
      return;
    }
    raw[ROUTER_ERROR] = error;
    const url = raw.url ?? '';
    const prefix = pagePrefixes.find((p) => url.startsWith(`${p}/`));
    raw.url = prefix === undefined ? REFUSED_URL_PATH : `${prefix}${REFUSED_URL_PATH}/`;
    request.server.routing(raw, reply.raw);
  };
}

/** routeFrameworkErrorsUnder without page prefixes: every refusal answers in the envelope. */
export const routeFrameworkErrors = routeFrameworkErrorsUnder([]);

/**
 * Fastify's `clientErrorHandler`: Node's HTTP parser refused the bytes on a connection
 * (request headers over 16 KiB, a malformed request line, a request that never finished),
 * so no request exists and no hook can run. The answer is still the envelope, never Node's
 * or Fastify's own shape; the connection is then closed, as Node does.
 */
export function answerClientError(error: Error & { code?: string }, socket: Duplex): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, reason, body] =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? [
          431,
          'Request Header Fields Too Large',
          envelope('validation_error', 'request headers (the URL included) must not exceed 16 KiB'),
        ]
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'Request Timeout', envelope('validation_error', 'the request was not received in time')]
        : [400, 'Bad Request', validationBody('malformed request', [])];
  const text = JSON.stringify(body);
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(text)}\r\nX-Content-Type-Options: nosniff\r\n` +
        `Connection: close\r\n\r\n${text}`,
    );
  }
  socket.destroy(error);
}

/**
 * Answers `error` (see errorResponse) on `reply` and returns the reply: for hooks that answer
 * before any handler runs (the 401, the draining 503), and for the error handler itself.
 */
export function sendError(reply: FastifyReply, error: unknown): FastifyReply {
  const { status, body } = errorResponse(error);
  // Error bodies are built here, whole; never let a route's response schema reshape or
  // reject one (a failed serialization would answer with Fastify's internal text).
  return reply
    .code(status)
    .type('application/json; charset=utf-8')
    .serializer((payload: unknown) => JSON.stringify(payload))
    .send(body);
}

/** Installs the one error handler and the 404 handler for unknown routes (SPEC §2). */
export function registerErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error: unknown, request: FastifyRequest, reply: FastifyReply) => {
    if (errorResponse(error).status >= 500) request.log.error({ err: error }, 'request failed');
    return sendError(reply, error);
  });
  app.setNotFoundHandler((request: FastifyRequest, reply: FastifyReply) => {
    const refused = (request.raw as RefusedRequest)[ROUTER_ERROR];
    if (refused) throw refused;
    const path = request.url.split('?')[0]?.slice(0, 200);
    return sendError(reply, new AppError('not_found', `no route for ${request.method} ${path}`));
  });
}
