// /api/invoices: list, get, void, finalize a draft, mark uncollectible (SPEC §3, §9, §12). Invoices are issued by
// the subscription flows and settled by payments; these routes read them and close them.
import { CANNOT_FINALIZE, finalizeInvoiceNow } from '../billing/finalize.ts';
import type { Deps } from '../deps.ts';
import { type ListQueryInput, listQuerySchema, parseListParams } from '../http/lists.ts';
import { defineRoute, type Route } from '../http/route.ts';
import { API_KEY_SECURITY, errorResponses, idParams, responseOf } from '../http/schemas.ts';
import { INVOICE_STATUSES } from '../modules/invoices/invoices.status.ts';
import { invoiceDetailSchema, invoiceListSchema, invoiceSchema } from '../modules/invoices/invoices.schemas.ts';
import * as service from '../modules/invoices/invoices.service.ts';
import { invoicePreviewSchema, previewInvoiceBody } from '../billing/plan-changes.schemas.ts';
import { previewChange } from '../billing/plan-changes.ts';

const common = { tags: ['Invoices'], security: API_KEY_SECURITY };
// No NUL: PostgreSQL rejects it in text parameters (a 500), SQLite does not; bad input is a 4xx.
const idFilter = { type: 'string', maxLength: 64, pattern: '^[^\\u0000]*$' } as const;
const stateChangeResponses = {
  200: responseOf(invoiceSchema, 'The invoice in its new state'),
  ...errorResponses(400, 401, 403, 404, 409, 415),
};

/** Routes of the invoices module. */
export function invoiceRoutes(deps: Deps): Route[] {
  const { db, config } = deps;
  return [
    defineRoute<{ Querystring: ListQueryInput & service.InvoiceFilters }>({
      method: 'GET',
      url: '/api/invoices',
      schema: {
        ...common,
        operationId: 'listInvoices',
        summary: 'List invoices',
        description: 'Filters are exact matches; `sort_by` is `created_at` (default), `due_at` or `amount_due`.',
        querystring: listQuerySchema(service.INVOICE_SORT_FIELDS, {
          customer_id: idFilter,
          subscription_id: idFilter,
          status: { type: 'string', enum: [...INVOICE_STATUSES] },
        }),
        response: { 200: responseOf(invoiceListSchema, 'A page of invoices'), ...errorResponses(400, 401, 403) },
      },
      handler: async (request) => {
        const { customer_id, subscription_id, status } = request.query;
        return service.listInvoices(db, config.publicUrl, parseListParams(request.query), {
          customer_id,
          subscription_id,
          status,
        });
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/api/invoices/:id',
      schema: {
        ...common,
        operationId: 'getInvoice',
        summary: 'Get an invoice',
        description:
          'The invoice and `payment_attempts`: every request the service made to a provider to collect it (checkout links, charges), oldest first, with provider, reference, status, failure code/message and timestamps. Only here: lists and `invoice.*` events show the invoice without them.',
        params: idParams,
        response: {
          200: responseOf(invoiceDetailSchema, 'The invoice and its payment attempts'),
          ...errorResponses(401, 403, 404),
        },
      },
      handler: async (request) => service.getInvoice(db, config.publicUrl, request.params.id),
    }),
    defineRoute({
      method: 'POST',
      url: '/api/invoices/preview',
      config: { scope: 'read' },
      schema: {
        ...common,
        operationId: 'previewInvoice',
        summary: 'Preview an invoice',
        description:
          "The invoice a change of `subscription_id` would produce (the fields of PATCH /api/subscriptions/{id}), composed by the same pipeline and rules and never stored: no id, no number. `always_invoice` and interval changes: the invoice the change issues now; otherwise the renewal that follows, on the new plan, with the proration items waiting. Without a change: the upcoming renewal. Send the answer's `proration_date` with the change to get exactly these lines. Read scope.",
        body: previewInvoiceBody,
        response: {
          200: responseOf(invoicePreviewSchema, 'The invoice that would result'),
          ...errorResponses(400, 401, 403, 404, 409, 415),
        },
      },
      handler: async (request) => {
        const preview = await previewChange(db, deps, request.body);
        return { ...preview, lines: [...preview.lines] };
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/api/invoices/:id/void',
      schema: {
        ...common,
        operationId: 'voidInvoice',
        summary: 'Void an invoice',
        description:
          'From `draft`, `open` or `uncollectible`: nothing is owed on it any more (a voided draft never takes a number). Emits `invoice.voided`; an open dunning case chasing the invoice closes as `cancelled`. From `paid` or `void`: 409 `validation_error` "cannot be voided in its current state". No body.',
        params: idParams,
        response: stateChangeResponses,
      },
      handler: async (request) => service.voidInvoice(deps, request.params.id),
    }),
    defineRoute({
      method: 'POST',
      url: '/api/invoices/:id/finalize',
      config: { scope: 'admin' },
      schema: {
        ...common,
        operationId: 'finalizeInvoice',
        summary: 'Finalize a draft invoice now',
        description: `From \`draft\` only, before its \`finalizes_at\`: it takes the next invoice number, becomes \`open\` (\`invoice.finalized\`) and is collected like any open renewal (charged at once when its customer has a saved method). Otherwise 409 \`validation_error\` "${CANNOT_FINALIZE}". No body. Admin scope.`,
        params: idParams,
        response: stateChangeResponses,
      },
      handler: async (request) => finalizeInvoiceNow(deps, request.params.id),
    }),
    defineRoute({
      method: 'POST',
      url: '/api/invoices/:id/mark-uncollectible',
      schema: {
        ...common,
        operationId: 'markInvoiceUncollectible',
        summary: 'Mark an invoice uncollectible',
        description:
          'From `open` only: the debt is written off but a later payment still settles it. Emits `invoice.marked_uncollectible`; an open dunning case chasing the invoice closes as `cancelled`. Otherwise 409 `validation_error` "cannot be marked uncollectible in its current state". No body.',
        params: idParams,
        response: stateChangeResponses,
      },
      handler: async (request) => service.markInvoiceUncollectible(deps, request.params.id),
    }),
  ];
}
