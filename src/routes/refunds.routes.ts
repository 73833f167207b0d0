// POST /api/payments/{id}/refund: money back through the payment's provider (SPEC §10). The
// route validates and documents; billing/refunds.ts does the work.
import type { Deps } from '../deps.ts';
import { defineRoute, type Route } from '../http/route.ts';
import { API_KEY_SECURITY, errorResponses, idParams, responseOf } from '../http/schemas.ts';
import { refundSchema } from '../modules/payments/payments.schemas.ts';
import { refundPayment, refundRequestKey } from '../billing/refunds.ts';
import { refundRequestBody } from '../billing/refunds.schemas.ts';

/** POST /api/payments/{id}/refund (SPEC §10): a refund through billing/refunds.ts. */
export function refundRoutes(deps: Deps): Route[] {
  return [
    defineRoute({
      method: 'POST',
      url: '/api/payments/:id/refund',
      schema: {
        tags: ['Payments'],
        security: API_KEY_SECURITY,
        operationId: 'refundPayment',
        summary: 'Refund a payment',
        description:
          "Asks the payment's provider to refund `amount` (default: all that may still be refunded) and answers 202 with the refund, `pending` until the provider's event settles it (`payment.refunded`, or `payment.refund_failed`). " +
          'Paystack: `POST /refund` `{transaction, amount, merchant_note}`; Stripe: `POST /v1/refunds` `{payment_intent, amount, reason?, metadata}` with our refund id as `Idempotency-Key`. ' +
          'Pending refunds count: a request beyond `amount` − succeeded − pending is refused (422 `invalid_state`), nothing left at all is 409 `validation_error`, as is a failed payment. ' +
          'A `manual` payment, a provider without API key, or one that refuses the key or the request: 422 `invalid_state` (a refused refund is kept as `failed`). ' +
          'No usable answer within `PROVIDER_TIMEOUT`: 503 `internal_error`; the refund stays `pending` and a retry with the same `Idempotency-Key` resumes it (Stripe: the same key; Paystack: looked up before it is sent again), never a second refund; without a retry the worker resumes it a minute later.',
        params: idParams,
        body: refundRequestBody,
        response: {
          202: responseOf(refundSchema, 'The refund, pending until the provider settles it'),
          ...errorResponses(400, 401, 403, 404, 409, 413, 415, 422),
          503: {
            description:
              'The provider gave no usable answer (timeout, 5xx, unreachable), or the instance is shutting down: the refund stays pending; retry with the same Idempotency-Key',
            $ref: 'Error#',
            examples: [
              {
                code: 'internal_error',
                message:
                  'Stripe did not answer within 30000 ms; the refund re_01JD3Q7Z8X9Y0A1B2C3D4E5F6G stays pending: retry with the same Idempotency-Key',
                details: {
                  provider: 'stripe',
                  refund_id: 're_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
                  reason: 'timeout',
                  provider_status: null,
                  provider_code: null,
                },
              },
            ],
          },
        },
      },
      handler: async (request, reply) =>
        reply
          .code(202)
          .send(
            await refundPayment(
              deps,
              request.params.id,
              request.body ?? {},
              refundRequestKey(request.idempotencyClaim),
            ),
          ),
    }),
  ];
}
