// pino options: JSON logs with the request id; every credential redacted wherever it appears.
import type { FastifyBaseLogger, FastifyServerOptions } from 'fastify';
import type { Bindings, ChildLoggerOptions, DestinationStream, Logger, LoggerOptions } from 'pino';

/** Paths pino replaces with "[redacted]": API keys, provider signatures, secrets. */
export const REDACTED_PATHS = [
  'req.headers.authorization',
  'req.headers["x-api-key"]',
  'req.headers["x-paystack-signature"]',
  'req.headers["stripe-signature"]',
  'req.headers.cookie',
  'headers.authorization',
  'headers["x-api-key"]',
  '*.headers.authorization',
  '*.headers["x-api-key"]',
  'key',
  'secret',
  'apiKey',
  'apiKeys',
  '*.key',
  '*.secret',
  '*.apiKey',
  '*.apiKeys',
  '*.paystackSecretKey',
  '*.stripeWebhookSecret',
  '*.stripeApiKey',
  '*.secretKey',
  '*.dataEncryptionKey',
  '*.dataEncryptionKeys',
  '*.credential',
];

const SECRET_QUERY_PARAM = /key|token|secret|signature|password|auth/i;

/**
 * Paths whose segment after the prefix is a credential: a customer portal or console sign-in
 * link's token (SPEC §16), and the hosted invoice and credit note pages' tokens (§9, §14: whoever holds one can
 * read the document, and pay an invoice).
 */
const SECRET_PATH = /^(\/(?:portal\/open|console\/login|i|c)\/)[^/?#]+/;

/**
 * The URL as logged: query values whose names look like credentials are replaced, so a
 * key someone put in a query string (and was refused for) never reaches the logs; so is the
 * token of a portal link (`/portal/open/[redacted]`) or of a hosted page (`/i/[redacted]/pay`).
 */
export function redactUrl(given: string): string {
  const url = given.replace(SECRET_PATH, '$1[redacted]');
  const queryStart = url.indexOf('?');
  if (queryStart === -1) return url;
  const params = new URLSearchParams(url.slice(queryStart + 1));
  for (const name of new Set(params.keys())) {
    if (SECRET_QUERY_PARAM.test(name)) params.set(name, '[redacted]');
  }
  return `${url.slice(0, queryStart)}?${params.toString()}`;
}

interface LoggedRequest {
  method: string;
  url: string;
  ip?: string;
}

/** Logger options for Fastify: level from LOG_LEVEL, secrets redacted, optional destination (tests). */
export function loggerOptions(
  level: string,
  stream?: DestinationStream,
): LoggerOptions & { stream?: DestinationStream } {
  return {
    level,
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    serializers: {
      req: (request: LoggedRequest) => ({
        method: request.method,
        url: redactUrl(request.url),
        remoteAddress: request.ip,
      }),
    },
    ...(stream ? { stream } : {}),
  };
}

type LogMethod = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';

/**
 * A request's logger that creates its pino child (bindings: the request id; redaction set up)
 * only when something is logged at an enabled level. Fastify makes a child per request; at
 * LOG_LEVEL=warn nearly every request logs nothing, and the child's cost was paid for nothing
 * (a profile of the list under load, docs/performance.md). What is logged is exactly what the child
 * would log.
 */
class DeferredChildLogger {
  readonly #parent: Logger;
  readonly #bindings: Bindings;
  readonly #options: ChildLoggerOptions;
  #child: Logger | undefined;

  constructor(parent: Logger, bindings: Bindings, options: ChildLoggerOptions) {
    this.#parent = parent;
    this.#bindings = bindings;
    this.#options = options;
  }

  #real(): Logger {
    this.#child ??= this.#parent.child(this.#bindings, this.#options);
    return this.#child;
  }

  #log(method: LogMethod, args: unknown[]): void {
    if (this.#child === undefined && !this.#parent.isLevelEnabled(method)) return;
    (this.#real()[method] as (...values: unknown[]) => void)(...args);
  }

  get level(): string {
    return (this.#child ?? this.#parent).level;
  }

  set level(level: string) {
    this.#real().level = level;
  }

  isLevelEnabled(level: string): boolean {
    return (this.#child ?? this.#parent).isLevelEnabled(level);
  }

  bindings(): Bindings {
    return this.#real().bindings();
  }

  fatal(...args: unknown[]): void {
    this.#log('fatal', args);
  }
  error(...args: unknown[]): void {
    this.#log('error', args);
  }
  warn(...args: unknown[]): void {
    this.#log('warn', args);
  }
  info(...args: unknown[]): void {
    this.#log('info', args);
  }
  debug(...args: unknown[]): void {
    this.#log('debug', args);
  }
  trace(...args: unknown[]): void {
    this.#log('trace', args);
  }
  silent(): void {}

  child(bindings: Bindings, options?: ChildLoggerOptions): Logger {
    return this.#real().child(bindings, options);
  }
}

/**
 * Fastify's per-request child logger factory: the usual pino child when `info` (Fastify's
 * request log lines) is enabled or the route sets its own log level, else a
 * DeferredChildLogger, made real by the first line actually logged.
 */
export const requestLoggerFactory: NonNullable<FastifyServerOptions['childLoggerFactory']> =
  function requestLoggerFactory(logger, bindings, options) {
    const parent = logger as unknown as Logger;
    if (options.level !== undefined || parent.isLevelEnabled('info')) return logger.child(bindings, options);
    return new DeferredChildLogger(parent, bindings, options) as unknown as FastifyBaseLogger;
  };
