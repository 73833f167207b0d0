// GET /c/{token}: a credit note's hosted page (SPEC §14 "Credit notes": "hosted page and PDF
// like invoices"), and GET /c/{token}.pdf, its PDF. Public (no API key): the unguessable token
// in `hosted_credit_note_url` is the only credential. Registered by app.ts as its own plugin
// under the prefix /c, outside the API's context, exactly as the invoice pages under /i
// (invoices.page.routes.ts): the same headers (the hosted-page CSP, noindex, no referrer, no
// caching), rate limited per IP like every public route, and nothing under /c ever answers
// JSON — the note, or one 404 page for any unknown or malformed token, and 429 / 500 pages.
// Read only: a note's page has no form. Not in /openapi.json: a document for people.
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../deps.ts';
import { findCreditNoteRowByToken } from '../modules/credit-notes/credit-notes.records.ts';
import { renderCreditNotePage, renderCreditNoteProblemPage } from '../modules/documents/documents.hosted-page.ts';
import { creditNotePdfOf, loadCreditNoteDocument } from '../modules/documents/documents.service.ts';
import { answerWithProblemPages, registerTokenDocumentRoutes, sendPage } from './hosted-documents.ts';

/** The prefix of hosted credit note URLs: `<PUBLIC_URL>/c/<token>` (hostedCreditNoteUrl). */
export const CREDIT_NOTE_PAGE_PREFIX = '/c';

/**
 * Registers GET /c/:token and GET /c/:token.pdf (and HEAD) on `app`, a plugin context with the
 * prefix CREDIT_NOTE_PAGE_PREFIX, plus that context's not-found and error handlers: a bad
 * request (NUL, malformed token) is the 404 page, a rate limit the 429 page (Retry-After
 * kept), a failure the 500 page (logged). The page is in the customer's `preferred_locale`.
 */
export async function registerHostedCreditNotePages(app: FastifyInstance, deps: Deps): Promise<void> {
  const { notFound } = answerWithProblemPages(
    app,
    (problem) => renderCreditNoteProblemPage(problem, deps.config.businessName),
    'hosted credit note page',
  );
  registerTokenDocumentRoutes(app, notFound, {
    find: (token) => findCreditNoteRowByToken(deps.db, token),
    pdf: (row) => creditNotePdfOf(deps.db, deps.config, row),
    page: async (reply, row) =>
      sendPage(reply, 200, renderCreditNotePage(await loadCreditNoteDocument(deps.db, deps.config, row))),
  });
}
