// POST /api/invoices/{id}/checkout: a payment page at Paystack or Stripe for an open invoice
// (SPEC §10). The route validates and documents; billing/checkout.ts does the work.
import type { Deps } from '../deps.ts';
import { defineRoute, type Route } from '../http/route.ts';
import { API_KEY_SECURITY, errorResponses, idParams, responseOf } from '../http/schemas.ts';
import { createCheckoutLink } from '../billing/checkout.ts';
import { checkoutBody, checkoutLinkSchema } from '../billing/checkout.schemas.ts';

/** POST /api/invoices/{id}/checkout (SPEC §10): a checkout link through billing/checkout.ts. */
export function checkoutRoutes(deps: Deps): Route[] {
  return [
    defineRoute({
      method: 'POST',
      url: '/api/invoices/:id/checkout',
      schema: {
        tags: ['Invoices'],
        security: API_KEY_SECURITY,
        operationId: 'createInvoiceCheckout',
        summary: 'Create a checkout link for an invoice',
        description:
          "Asks the provider (`provider`, default `DEFAULT_PROVIDER`) for a payment page for the invoice's `amount_remaining` and records a payment attempt with our `reference`. " +
          "Paystack: a transaction initialized with the customer's email; Stripe: a Checkout Session in `payment` mode that saves the card for later charges. " +
          'Both carry `metadata {customer_id, subscription_id, invoice_id}`, so the payment settles this invoice when the provider reports it. ' +
          'Only `open` invoices: 409 `validation_error` otherwise. A provider without an API key, or one that refuses the key or the request: 422 `invalid_state`. ' +
          'No usable answer within `PROVIDER_TIMEOUT`: 503 `internal_error` (nothing was charged; retry).',
        params: idParams,
        body: checkoutBody,
        response: {
          201: responseOf(checkoutLinkSchema, 'The link to send the customer to'),
          ...errorResponses(400, 401, 403, 404, 409, 413, 415, 422),
          503: {
            description:
              'The provider gave no usable answer (timeout, 5xx, unreachable), or the instance is shutting down: retry later',
            $ref: 'Error#',
            examples: [
              {
                code: 'internal_error',
                message: 'Paystack did not answer within 30000 ms; retry later',
                details: {
                  provider: 'paystack',
                  reference: 'pat-01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
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
        reply.code(201).send(await createCheckoutLink(deps, request.params.id, request.body ?? {})),
    }),
  ];
}
