// GET /c/{token}: a credit note's hosted page (SPEC §14 "Credit notes": "hosted page and PDF
// like invoices"), and GET /c/{token}.pdf, its PDF. Public (no API key): the unguessable token
// in `hosted_credit_note_url` is the only credential. Registered by app.ts as its own plugin
// under the prefix /c, outside the API's context, exactly as the invoice pages under /i
// (invoices.page.routes.ts): the same headers (the hosted-page CSP, noindex, no referrer, no
// caching), rate limited per IP like every public route, and nothing under /c ever answers
// JSON — the note, or one 404 page for any unknown or malformed token, and 429 / 500 pages.
// Read only: a note's page has no form. Not in /openapi.json: a document for people.
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Deps } from '../deps.ts';
import { errorResponse } from '../http/errors.ts';
import { findCreditNoteRowByToken } from '../modules/credit-notes/credit-notes.records.ts';
import { renderCreditNotePage, renderCreditNoteProblemPage } from '../modules/documents/documents.hosted-page.ts';
import { creditNotePdfOf, loadCreditNoteDocument } from '../modules/documents/documents.service.ts';
import { HOSTED_PAGE_HEADERS } from './invoices.page.routes.ts';
import { PDF_HEADERS } from './pdf-response.ts';

/** The prefix of hosted credit note URLs: `<PUBLIC_URL>/c/<token>` (hostedCreditNoteUrl). */
export const CREDIT_NOTE_PAGE_PREFIX = '/c';

function sendPage(reply: FastifyReply, status: number, html: string): FastifyReply {
  return reply.code(status).headers(HOSTED_PAGE_HEADERS).send(html);
}

/**
 * Registers GET /c/:token and GET /c/:token.pdf (and HEAD) on `app`, a plugin context with the
 * prefix CREDIT_NOTE_PAGE_PREFIX, plus that context's not-found and error handlers: a bad
 * request (NUL, malformed token) is the 404 page, a rate limit the 429 page (Retry-After
 * kept), a failure the 500 page (logged). The page is in the customer's `preferred_locale`.
 */
export async function registerHostedCreditNotePages(app: FastifyInstance, deps: Deps): Promise<void> {
  const { businessName } = deps.config;
  const problems = new Map<404 | 429 | 500, string>();
  const problemPage = (problem: 404 | 429 | 500) => {
    let html = problems.get(problem);
    if (html === undefined) problems.set(problem, (html = renderCreditNoteProblemPage(problem, businessName)));
    return html;
  };
  const notFound = (reply: FastifyReply) => sendPage(reply, 404, problemPage(404));

  app.setNotFoundHandler((_request, reply) => notFound(reply));
  app.setErrorHandler((error, request, reply) => {
    const { status } = errorResponse(error);
    if (status === 429) return sendPage(reply, 429, problemPage(429));
    if (status < 500) return notFound(reply);
    request.log.error({ err: error }, 'hosted credit note page failed');
    return sendPage(reply, 500, problemPage(500));
  });

  app.get<{ Params: { token: string } }>(
    '/:token.pdf',
    { config: { scope: 'public' }, schema: { hide: true } },
    async (request, reply) => {
      const row = await findCreditNoteRowByToken(deps.db, request.params.token);
      if (!row) return notFound(reply);
      const { filename, pdf } = await creditNotePdfOf(deps.db, deps.config, row);
      return reply
        .code(200)
        .headers({
          ...PDF_HEADERS,
          'content-disposition': `inline; filename="${filename}"`,
          'cache-control': 'no-store',
          'x-robots-tag': 'noindex, nofollow',
          'referrer-policy': 'no-referrer',
        })
        .send(pdf);
    },
  );

  app.get<{ Params: { token: string } }>(
    '/:token',
    { config: { scope: 'public' }, schema: { hide: true } },
    async (request, reply) => {
      const row = await findCreditNoteRowByToken(deps.db, request.params.token);
      if (!row) return notFound(reply);
      return sendPage(reply, 200, renderCreditNotePage(await loadCreditNoteDocument(deps.db, deps.config, row)));
    },
  );
}
