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

/** Logger options for Fastify: level from LOG_LEVEL, secrets redacted, optional destination (tests). */
export function loggerOptions(
  level: string,
  stream?: DestinationStream,
): LoggerOptions & { stream?: DestinationStream } {
  return {
    level,
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    ...(stream ? { stream } : {}),
  };
}
