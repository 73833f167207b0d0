// POST /api/invoices/{id}/pay (SPEC §9): paid out of band. The invoice's other routes
// (list, get, void, mark-uncollectible) are in invoices.routes.ts.
import type { Deps } from '../deps.ts';
import { defineRoute, type Route } from '../http/route.ts';
import { API_KEY_SECURITY, errorResponses, idParams, responseOf } from '../http/schemas.ts';
import { payInvoiceBody, payInvoiceOutOfBand } from '../billing/pay-out-of-band.ts';
import { invoiceSchema } from '../modules/invoices/invoices.schemas.ts';

/** The out-of-band payment route of the invoices module. */
export function invoicePayRoutes(deps: Deps): Route[] {
  return [
    defineRoute({
      method: 'POST',
      url: '/api/invoices/:id/pay',
      schema: {
        tags: ['Invoices'],
        security: API_KEY_SECURITY,
        operationId: 'payInvoice',
        summary: 'Pay an invoice out of band',
        description:
          "Cash or bank transfer: records a payment with provider `manual` for `amount_remaining` in the invoice's currency, which settles it (`paid`; events `payment.succeeded`, `invoice.paid`) and moves its subscription like any payment. From `open` or `uncollectible`; a `paid` or `void` invoice, or a `reference` already recorded: 409 `validation_error`.",
        params: idParams,
        body: payInvoiceBody,
        response: {
          200: responseOf(invoiceSchema, 'The invoice, paid'),
          ...errorResponses(400, 401, 403, 404, 409, 413, 415),
        },
      },
      handler: async (request) => payInvoiceOutOfBand(deps.db, deps, request.params.id, request.body),
    }),
  ];
}
