// /api/credit-notes (SPEC §14 "Credit notes"): issue, void, list, get. The routes validate and
// document; billing/credit-notes.ts does the work, modules/credit-notes reads.
import type { Deps } from '../deps.ts';
import { type ListQueryInput, listQuerySchema, parseListParams } from '../http/lists.ts';
import { defineRoute, type Route } from '../http/route.ts';
import { API_KEY_SECURITY, errorResponses, idParams, responseOf } from '../http/schemas.ts';
import { createCreditNote, creditNoteRequestKey, voidCreditNote } from '../billing/credit-notes.ts';
import {
  type CreditNoteFilters,
  getCreditNote,
  listCreditNotes,
} from '../modules/credit-notes/credit-notes.records.ts';
import {
  CREDIT_NOTE_SORT_FIELDS,
  createCreditNoteBody,
  creditNoteListSchema,
  creditNoteSchema,
} from '../modules/credit-notes/credit-notes.schemas.ts';
import { getCreditNotePdf } from '../modules/documents/documents.service.ts';
import { PDF_HEADERS } from './pdf-response.ts';

const common = { tags: ['Credit notes'], security: API_KEY_SECURITY };
// No NUL: PostgreSQL rejects it in text parameters (a 500), SQLite does not; bad input is a 4xx.
const idFilter = { type: 'string', maxLength: 64, pattern: '^[^\\u0000]*$' } as const;

/** Routes of credit notes. */
export function creditNoteRoutes(deps: Deps): Route[] {
  const { db, config } = deps;
  return [
    defineRoute({
      method: 'POST',
      url: '/api/credit-notes',
      schema: {
        ...common,
        operationId: 'createCreditNote',
        summary: 'Issue a credit note',
        description:
          'Corrects a finalized invoice (`open`, `uncollectible` or `paid`) by `amount`, or by `lines` (invoice line ids and amounts; the note is their sum). ' +
          'The note first lowers what the invoice still owes (`amount_due`; an invoice left owing nothing is `paid`); the rest — all of it on a paid invoice — must equal `refund_amount + credit_amount + out_of_band_amount` exactly (400 otherwise). ' +
          "`refund_amount` is refunded through the invoice's payments' providers (spread over its payments, oldest first), exactly once: each refund is committed `pending` with the note and asked of the provider afterwards; without a usable answer the worker resumes it (`refunds` names them: GET /api/refunds/{id}). " +
          "`credit_amount` goes to the customer's credit balance; `out_of_band_amount` is recorded only. " +
          "Never more than the invoice's total minus its earlier non-void notes (400). A draft or void invoice: 409 `validation_error`. A refund beyond what the invoice's provider payments may still refund: 422 `invalid_state`. Emits `credit_note.created`.",
        body: createCreditNoteBody,
        response: {
          201: responseOf(creditNoteSchema, 'The credit note, issued'),
          ...errorResponses(400, 401, 403, 404, 409, 413, 415, 422),
        },
      },
      handler: async (request, reply) =>
        reply
          .code(201)
          .send(await createCreditNote(deps, request.body, creditNoteRequestKey(request.idempotencyClaim))),
    }),
    defineRoute<{ Querystring: ListQueryInput & CreditNoteFilters }>({
      method: 'GET',
      url: '/api/credit-notes',
      schema: {
        ...common,
        operationId: 'listCreditNotes',
        summary: 'List credit notes',
        description: 'Filters are exact matches; `sort_by` is `created_at` (default) or `amount`.',
        querystring: listQuerySchema(CREDIT_NOTE_SORT_FIELDS, { invoice_id: idFilter, customer_id: idFilter }),
        response: {
          200: responseOf(creditNoteListSchema, 'A page of credit notes'),
          ...errorResponses(400, 401, 403),
        },
      },
      handler: async (request) => {
        const { invoice_id, customer_id } = request.query;
        return listCreditNotes(db, config.publicUrl, parseListParams(request.query), { invoice_id, customer_id });
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/api/credit-notes/:id',
      schema: {
        ...common,
        operationId: 'getCreditNote',
        summary: 'Get a credit note',
        params: idParams,
        response: { 200: responseOf(creditNoteSchema, 'The credit note'), ...errorResponses(401, 403, 404) },
      },
      handler: async (request) => getCreditNote(db, config.publicUrl, request.params.id),
    }),
    defineRoute({
      method: 'GET',
      url: '/api/credit-notes/:id/pdf',
      schema: {
        ...common,
        operationId: 'getCreditNotePdf',
        summary: 'Get a credit note as a PDF',
        description:
          'The credit note as a PDF (A4), laid out as an invoice\'s, in the language of the customer\'s `preferred_locale` (SPEC §14 "Credit notes"): seller and buyer, number, date, the invoice credited (its number), reason, the credited lines (or one line for a note issued for an amount), how the amount splits (taken off the amount due, refunded, credited to the balance, out of band), total and memo. A `void` note is stamped. The same note in the same state always gives the same bytes.',
        params: idParams,
        response: {
          200: {
            description: 'The credit note as a PDF',
            content: { 'application/pdf': { schema: { type: 'string', format: 'binary' } } },
          },
          ...errorResponses(401, 403, 404),
        },
      },
      handler: async (request, reply) => {
        const { filename, pdf } = await getCreditNotePdf(db, config, request.params.id);
        return reply.headers({ ...PDF_HEADERS, 'content-disposition': `inline; filename="${filename}"` }).send(pdf);
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/api/credit-notes/:id/void',
      schema: {
        ...common,
        operationId: 'voidCreditNote',
        summary: 'Void a credit note',
        description:
          "Undoes what the note did: the invoice owes its pre-payment part again (the invoice must still be `open` or `uncollectible`), its credit leaves the customer's balance (a `reversal`; 409 `conflict` when the balance no longer holds it). " +
          'A note that asked for a refund cannot be voided (a refund is not taken back), nor a void one: 409 `validation_error`. Emits `credit_note.voided`. No body.',
        params: idParams,
        response: {
          200: responseOf(creditNoteSchema, 'The credit note, void'),
          ...errorResponses(400, 401, 403, 404, 409, 415),
        },
      },
      handler: async (request) => voidCreditNote(deps, request.params.id),
    }),
  ];
}
