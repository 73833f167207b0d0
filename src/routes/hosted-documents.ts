// What the public pages of a document addressed by its token share — an invoice under /i
// (invoices.page.routes.ts), a credit note under /c (credit-notes.page.routes.ts): the
// headers of every answer, the problem pages that stand in for JSON errors (one 404 page for
// any unknown or malformed token, 429, 500), and the two GET routes, the page and its PDF.
import type { FastifyInstance, FastifyReply } from 'fastify';
import { errorResponse } from '../http/errors.ts';
import { HOSTED_PAGE_CSP } from '../modules/documents/documents.hosted-page.ts';
import { PDF_HEADERS } from './pdf-response.ts';

/**
 * The headers of every hosted page response. They replace the API's CSP (set earlier by
 * http/security-headers.ts, whose other helmet headers stay: nosniff, frame DENY, …).
 */
export const HOSTED_PAGE_HEADERS = {
  'content-type': 'text/html; charset=utf-8',
  'content-security-policy': HOSTED_PAGE_CSP,
  'x-robots-tag': 'noindex, nofollow',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
} as const;

/** Sends `html` with `status` and the hosted page headers. */
export function sendPage(reply: FastifyReply, status: number, html: string): FastifyReply {
  return reply.code(status).headers(HOSTED_PAGE_HEADERS).send(html);
}

/** The problem pages every hosted document context answers with, whatever else it adds. */
type ContextProblem = 404 | 429 | 500;

/**
 * Makes every answer of the plugin context `app` a page: its not-found handler and its error
 * handler answer `problemPage(404)` for a bad request (NUL, malformed token, a refused body
 * type), `problemPage(429)` for a rate limit (Retry-After kept) and `problemPage(500)` for a
 * failure, logged as `what` failed. `render` is called once per problem (the pages are the
 * same for every request). Returns the page renderer and the 404 answer, for the routes.
 */
export function answerWithProblemPages<Problem extends number = never>(
  app: FastifyInstance,
  render: (problem: Problem | ContextProblem) => string,
  what: string,
): { problemPage: (problem: Problem | ContextProblem) => string; notFound: (reply: FastifyReply) => FastifyReply } {
  const pages = new Map<Problem | ContextProblem, string>();
  const problemPage = (problem: Problem | ContextProblem) => {
    let html = pages.get(problem);
    if (html === undefined) pages.set(problem, (html = render(problem)));
    return html;
  };
  const notFound = (reply: FastifyReply) => sendPage(reply, 404, problemPage(404));
  app.setNotFoundHandler((_request, reply) => notFound(reply));
  app.setErrorHandler((error, request, reply) => {
    const { status } = errorResponse(error);
    if (status === 429) return sendPage(reply, 429, problemPage(429));
    if (status < 500) return notFound(reply);
    request.log.error({ err: error }, `${what} failed`);
    return sendPage(reply, 500, problemPage(500));
  });
  return { problemPage, notFound };
}

/** A document addressed by a token: how to find its row, render its PDF and answer its page. */
export interface TokenDocument<Row> {
  find: (token: string) => Promise<Row | undefined>;
  pdf: (row: Row) => Promise<{ filename: string; pdf: Buffer }>;
  page: (reply: FastifyReply, row: Row) => Promise<FastifyReply>;
}

/**
 * Registers GET /:token.pdf and GET /:token (and HEAD) on `app`: public (no API key; the
 * token is the credential), hidden from /openapi.json; an unknown token is `notFound`. The
 * PDF is inline, named by `document.pdf`, never cached, never indexed, sent with no referrer.
 */
export function registerTokenDocumentRoutes<Row>(
  app: FastifyInstance,
  notFound: (reply: FastifyReply) => FastifyReply,
  document: TokenDocument<Row>,
): void {
  app.get<{ Params: { token: string } }>(
    '/:token.pdf',
    { config: { scope: 'public' }, schema: { hide: true } },
    async (request, reply) => {
      const row = await document.find(request.params.token);
      if (!row) return notFound(reply);
      const { filename, pdf } = await document.pdf(row);
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
      const row = await document.find(request.params.token);
      if (!row) return notFound(reply);
      return document.page(reply, row);
    },
  );
}
