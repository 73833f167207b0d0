// What a webhook request carries (SPEC §6): the body `{"topic","data"}` built once from the
// event's stored JSON, and the headers of each attempt — re-signed every time, so the
// timestamps are fresh while `X-Event-Id`/`webhook-id` stay the event id on every retry.
import { createHmac, randomBytes } from 'node:crypto';
import { VERSION } from '../../shared/version.ts';

export const USER_AGENT = `billing-api-webhooks/${VERSION}`;

/**
 * The exact body bytes: `{"topic":T,"data":D}` where D is the event's `data` column as
 * stored (serialized once by emitEvent), so every attempt and every endpoint gets the same bytes.
 */
export function webhookBody(topic: string, dataJson: string): string {
  return `{"topic":${JSON.stringify(topic)},"data":${dataJson}}`;
}

/**
 * Lowercase hex HMAC-SHA256 of `body` keyed with the secret as given, its UTF-8 bytes, also
 * for a `whsec_` secret (`X-Signature`, SPEC §6: the seed's rule).
 */
export function hexSignature(secret: string, body: string): string {
  return createHmac('sha256', secret).update(body, 'utf8').digest('hex');
}

/** The prefix of a Standard Webhooks secret (standardwebhooks.com spec, "Signature scheme"). */
export const STANDARD_SECRET_PREFIX = 'whsec_';

/** How many random bytes a generated secret holds (the spec allows 24 to 64). */
const GENERATED_SECRET_BYTES = 32;

/**
 * The key a Standard Webhooks secret stands for: `whsec_` + canonical, padded base64
 * (standard alphabet) of 24–64 bytes → those bytes; any other string → undefined. The
 * specification's own libraries decode the same part, so a receiver passing the secret as
 * given to `new Webhook(secret)` computes the same key (SPEC §6).
 */
export function standardSecretKey(secret: string): Buffer | undefined {
  if (!secret.startsWith(STANDARD_SECRET_PREFIX)) return undefined;
  const encoded = secret.slice(STANDARD_SECRET_PREFIX.length);
  if (encoded.length % 4 !== 0 || !/^[A-Za-z0-9+/]+={0,2}$/.test(encoded)) return undefined;
  const key = Buffer.from(encoded, 'base64');
  // Canonical only: base64 whose unused bits are not zero names the same bytes as another string.
  if (key.toString('base64') !== encoded) return undefined;
  return key.length >= 24 && key.length <= 64 ? key : undefined;
}

/** A new Standard Webhooks secret: `whsec_` + base64 of 32 bytes from the system CSPRNG. */
export function generateSecret(): string {
  return STANDARD_SECRET_PREFIX + randomBytes(GENERATED_SECRET_BYTES).toString('base64');
}

/**
 * The key of `webhook-signature`: the decoded bytes of a Standard Webhooks secret
 * (standardSecretKey), else the secret's UTF-8 bytes (SPEC §6).
 */
export function standardSigningKey(secret: string): Buffer {
  return standardSecretKey(secret) ?? Buffer.from(secret, 'utf8');
}

/**
 * The Standard Webhooks signature: `v1,` + base64 HMAC-SHA256 of `${id}.${seconds}.${body}`,
 * keyed with standardSigningKey(secret) (SPEC §6; standardwebhooks.com spec, "Signature scheme").
 */
export function standardSignature(secret: string, id: string, seconds: number, body: string): string {
  const mac = createHmac('sha256', standardSigningKey(secret))
    .update(`${id}.${seconds}.${body}`, 'utf8')
    .digest('base64');
  return `v1,${mac}`;
}

/**
 * Headers of one attempt at `now`: always Content-Type, User-Agent, X-Event-Id, X-Timestamp
 * (ISO 8601 UTC); with a secret also X-Signature and webhook-id / webhook-timestamp (unix
 * seconds) / webhook-signature.
 */
export function webhookHeaders(
  eventId: string,
  body: string,
  secret: string | null,
  now: Date,
): Record<string, string> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'user-agent': USER_AGENT,
    'x-event-id': eventId,
    'x-timestamp': now.toISOString(),
  };
  if (secret !== null) {
    const seconds = Math.floor(now.getTime() / 1000);
    headers['x-signature'] = hexSignature(secret, body);
    headers['webhook-id'] = eventId;
    headers['webhook-timestamp'] = String(seconds);
    headers['webhook-signature'] = standardSignature(secret, eventId, seconds, body);
  }
  return headers;
}
