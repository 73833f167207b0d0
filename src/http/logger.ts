// pino options: JSON logs with the request id; every credential redacted wherever it appears.
import type { DestinationStream, LoggerOptions } from 'pino';

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
];

const SECRET_QUERY_PARAM = /key|token|secret|signature|password|auth/i;

/**
 * The URL as logged: query values whose names look like credentials are replaced, so a
 * key someone put in a query string (and was refused for) never reaches the logs.
 */
export function redactUrl(url: string): string {
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
