// What a webhook request carries (SPEC §6): the body `{"topic","data"}` built once from the
// event's stored JSON, and the headers of each attempt — re-signed every time, so the
// timestamps are fresh while `X-Event-Id`/`webhook-id` stay the event id on every retry.
import { createHmac } from 'node:crypto';
import { VERSION } from '../../shared/version.ts';

export const USER_AGENT = `billing-api-webhooks/${VERSION}`;

/**
 * The exact body bytes: `{"topic":T,"data":D}` where D is the event's `data` column as
 * stored (serialized once by emitEvent), so every attempt and every endpoint gets the same bytes.
 */
export function webhookBody(topic: string, dataJson: string): string {
  return `{"topic":${JSON.stringify(topic)},"data":${dataJson}}`;
}

/** Lowercase hex HMAC-SHA256 of `body` keyed with the secret (`X-Signature`, SPEC §6). */
export function hexSignature(secret: string, body: string): string {
  return createHmac('sha256', secret).update(body, 'utf8').digest('hex');
}

/**
 * The Standard Webhooks signature: `v1,` + base64 HMAC-SHA256 of `${id}.${seconds}.${body}`,
 * keyed with the secret's UTF-8 bytes (SPEC §6; standardwebhooks.com spec, "Signature scheme").
 */
export function standardSignature(secret: string, id: string, seconds: number, body: string): string {
  const mac = createHmac('sha256', Buffer.from(secret, 'utf8'))
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
