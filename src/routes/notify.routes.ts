// POST /api/notify?p=paystack|stripe (SPEC §5): raw bytes → the provider's adapter verifies
// → the event is committed to the inbox → processed → 200 {"received":true}. Registered in
// its own Fastify context (inbox/inbox.raw-body.ts) so the bytes reach the signature check
// untouched.
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../deps.ts';
import { AppError, ValidationError } from '../http/errors.ts';
import { defineRoute, type Route } from '../http/route.ts';
import { errorResponses, responseOf } from '../http/schemas.ts';
import { notifyBodyDocumentation, notifyReceiptSchema } from './notify.schemas.ts';
import { BodyNotJsonError, NulInValueError, SignatureError } from '../providers/provider.ts';
import { findProvider, PROVIDERS, refuseNulInValues } from '../providers/registry.ts';
import { PROVIDER_NAMES } from '../shared/provider-names.ts';
import { acceptRawBodies } from '../inbox/inbox.raw-body.ts';
import type { Receiver } from '../inbox/inbox.receipt.ts';
import { createReceiver } from '../inbox/inbox.receiver.ts';

const DESCRIPTION = `Receives a provider's webhook. Authenticated by the provider's signature on the raw body
(no API key): Paystack \`X-Paystack-Signature\` (hex HMAC-SHA512 keyed with PAYSTACK_SECRET_KEY),
Stripe \`Stripe-Signature\` (\`t=…,v1=…\`, HMAC-SHA256 of \`t.body\` keyed with STRIPE_WEBHOOK_SECRET,
300 s tolerance). Every verified event is committed to an inbox first, then processed; the answer
is \`200 {"received":true}\` for processed, duplicate, ignored and failed-to-process events alike,
and 5xx only when the event could not be stored. A NUL character (\`\\u0000\`) in an identifier, code, currency
or amount is a 400 and nothing is stored (the provider retries); in display text (names, emails, messages,
metadata notes) it is removed. Handled types: Paystack \`charge.success\`,
\`invoice.payment_failed\`, \`refund.processed\`; Stripe \`payment_intent.succeeded\`,
\`payment_intent.payment_failed\`, \`invoice.paid\`, \`invoice.payment_failed\`, \`invoice_payment.paid\`
(links an invoice to its PaymentIntent on API versions ≥ 2025-05-28, so both are one payment),
\`charge.refunded\`, \`refund.created\`, \`refund.updated\`.`;

function headerValues(headers: Record<string, unknown>): Record<string, string | string[] | undefined> {
  return headers as Record<string, string | string[] | undefined>;
}

/**
 * Registers POST /api/notify in `context`, an encapsulated child of the API context: raw
 * bodies (inbox.raw-body.ts) and the route; closing the app waits for events in flight, so
 * none is cut between its two commits by the database closing.
 */
export function registerNotifyRoutes(context: FastifyInstance, deps: Deps): void {
  const receiver = createReceiver(deps);
  acceptRawBodies(context);
  for (const route of notifyRoutes(deps, receiver)) context.route(route);
  context.addHook('onClose', () => receiver.idle());
}

/** The notify route over `receiver`. */
function notifyRoutes(deps: Deps, receiver: Receiver): Route[] {
  const { config, clock } = deps;
  const signatureHeaders = Object.fromEntries(
    Object.values(PROVIDERS).map((adapter) => [
      adapter.signatureHeader,
      { type: 'string', description: `Signature for p=${adapter.name}` },
    ]),
  );
  return [
    defineRoute<{ Querystring: { p: string } }>({
      method: 'POST',
      url: '/api/notify',
      config: { scope: 'public' },
      schema: {
        operationId: 'receiveProviderEvent',
        tags: ['Provider events'],
        summary: 'Receive a payment provider event',
        security: [],
        description: DESCRIPTION,
        querystring: {
          type: 'object',
          required: ['p'],
          properties: { p: { type: 'string', enum: [...PROVIDER_NAMES], description: 'The provider' } },
        },
        headers: { type: 'object', properties: signatureHeaders },
        documentedBody: notifyBodyDocumentation,
        response: {
          200: responseOf(notifyReceiptSchema, 'The event is stored (and processed unless processing failed)'),
          ...errorResponses(400, 401, 413),
        },
      },
      handler: async (request) => {
        const adapter = findProvider(request.query.p);
        if (!adapter) throw new ValidationError(`p must be one of: ${PROVIDER_NAMES.join(', ')}`, 'p');
        const secret = adapter.secret(config);
        if (secret === '') {
          throw new AppError('authentication_error', `no signing secret is configured for ${adapter.name}`);
        }
        const raw = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
        let body: unknown;
        try {
          body = adapter.verify(raw, headerValues(request.headers), secret, clock.now());
        } catch (error) {
          if (error instanceof SignatureError) throw new AppError('authentication_error', error.message);
          if (error instanceof BodyNotJsonError) throw new ValidationError(error.message);
          throw error;
        }
        const payload = raw.toString('utf8');
        let identity: { key: string; type: string };
        try {
          identity = adapter.identify(body, raw);
          refuseNulInValues(adapter.name, body, payload, clock.now());
        } catch (error) {
          // SPEC §5: an event we cannot record is not stored; the 400 makes the provider retry.
          if (error instanceof NulInValueError) throw new ValidationError(error.message, error.field);
          throw error;
        }
        const { key, type } = identity;
        const receipt = await receiver.receive({
          event: { provider: adapter.name, key, type, payload },
          body,
          log: request.log,
        });
        request.log.info({ provider: adapter.name, eventType: type, receipt }, 'provider event received');
        return { received: true };
      },
    }),
  ];
}
