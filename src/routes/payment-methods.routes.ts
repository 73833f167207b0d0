// /api/customers/{id}/payment-methods: list, detach (DELETE), choose the default (PATCH)
// (SPEC §10), and POST …/setup: a provider page where the customer adds one without paying an
// invoice (billing/payment-method-setup.ts); the provider's event saves it, never this route.
import type { Deps } from '../deps.ts';
import { type ListQueryInput, listQuerySchema, parseListParams } from '../http/lists.ts';
import { defineRoute, type Route } from '../http/route.ts';
import { API_KEY_SECURITY, errorResponses, idParams, responseOf } from '../http/schemas.ts';
import {
  PAYMENT_METHOD_SORT_FIELDS,
  paymentMethodListSchema,
  paymentMethodParams,
  paymentMethodSchema,
  updatePaymentMethodBody,
} from '../modules/payment-methods/payment-methods.schemas.ts';
import * as service from '../modules/payment-methods/payment-methods.service.ts';
import { createPaymentMethodSetup } from '../billing/payment-method-setup.ts';
import { paymentMethodSetupBody, paymentMethodSetupSchema } from '../billing/payment-method-setup.schemas.ts';

const common = { tags: ['Customers'], security: API_KEY_SECURITY };

/** Routes of the payment-methods module. */
export function paymentMethodRoutes(deps: Deps): Route[] {
  const { db, clock } = deps;
  return [
    defineRoute({
      method: 'POST',
      url: '/api/customers/:id/payment-methods/setup',
      schema: {
        ...common,
        operationId: 'createPaymentMethodSetup',
        summary: 'Create a link where the customer adds a payment method',
        description:
          'Asks the provider (`provider`, default `DEFAULT_PROVIDER`) for a page where the customer saves a method without paying an invoice (SPEC §10 "Adding a method"). ' +
          "Stripe: a Checkout Session in `setup` mode; nothing is charged, and the SetupIntent's `setup_intent.succeeded` saves the method. " +
          'Paystack has no setup mode: a verification charge of `verification_amount` (NGN 50.00, GHS 0.10, ZAR 1.00 or USD 2.00: the least Paystack charges in each currency) whose `charge.success` saves the card and which is refunded in full, exactly once; it settles no invoice and becomes no credit. ' +
          'The saved method becomes the default, as any new one. A provider without an API key, or one that refuses the key or the request: 422 `invalid_state`. No usable answer within `PROVIDER_TIMEOUT`: 503 `internal_error` (retry).',
        params: idParams,
        body: paymentMethodSetupBody,
        response: {
          201: responseOf(paymentMethodSetupSchema, 'The link to send the customer to'),
          ...errorResponses(400, 401, 403, 404, 413, 415, 422),
          503: { description: 'The provider gave no usable answer: retry later', $ref: 'Error#' },
        },
      },
      handler: async (request, reply) =>
        reply.code(201).send(await createPaymentMethodSetup(deps, request.params.id, request.body ?? {})),
    }),
    defineRoute<{ Params: { id: string }; Querystring: ListQueryInput }>({
      method: 'GET',
      url: '/api/customers/:id/payment-methods',
      schema: {
        ...common,
        operationId: 'listPaymentMethods',
        summary: "List a customer's saved payment methods",
        description:
          'The active methods saved from succeeded payments (SPEC §10), with `default` marking the one automatic charges use. Detached methods are not listed. Card numbers and provider credentials are never shown.',
        params: idParams,
        querystring: listQuerySchema(PAYMENT_METHOD_SORT_FIELDS),
        response: {
          200: responseOf(paymentMethodListSchema, 'A page of payment methods'),
          ...errorResponses(400, 401, 403, 404),
        },
      },
      handler: async (request) =>
        service.listCustomerPaymentMethods(db, request.params.id, parseListParams(request.query)),
    }),
    defineRoute({
      method: 'PATCH',
      url: '/api/customers/:id/payment-methods/:pm',
      schema: {
        ...common,
        operationId: 'updatePaymentMethod',
        summary: 'Make a saved payment method the default',
        description:
          '`{"default": true}`: automatic charges use this method until another one is saved or chosen. `false` is refused (400). No event.',
        params: paymentMethodParams,
        body: updatePaymentMethodBody,
        response: {
          200: responseOf(paymentMethodSchema, 'The payment method'),
          ...errorResponses(400, 401, 403, 404, 413, 415),
        },
      },
      handler: async (request) =>
        service.updateCustomerPaymentMethod(db, clock, request.params.id, request.params.pm, request.body),
    }),
    defineRoute({
      method: 'DELETE',
      url: '/api/customers/:id/payment-methods/:pm',
      schema: {
        ...common,
        operationId: 'detachPaymentMethod',
        summary: 'Detach a saved payment method',
        description:
          'The method is never charged again and no longer listed; the default passes to the method saved or chosen last. Emits `payment_method.detached`.',
        params: paymentMethodParams,
        response: { 204: { type: 'null', description: 'Detached' }, ...errorResponses(401, 403, 404) },
      },
      handler: async (request, reply) => {
        await service.detachCustomerPaymentMethod(db, clock, request.params.id, request.params.pm);
        return reply.code(204).send();
      },
    }),
  ];
}
