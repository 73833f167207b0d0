// GET /i/{token}: the hosted invoice page (SPEC §9), public (no API key), HTML, never JSON.
// Registered by app.ts as its own plugin under the prefix /i, outside the API's context: no
// authentication, no response cache; rate limited per IP like every public route
// (http/rate-limit.ts). Every answer under /i is a page in the same style — the invoice, or
// one 404 for any unknown or malformed token, and 429 / 500 pages — with the same headers:
// a CSP allowing nothing but the page's own stylesheet, noindex, no referrer, no caching.
// Not in /openapi.json: it is a document for people, not part of the JSON API.
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Deps } from '../../deps.ts';
import { errorResponse } from '../../http/errors.ts';
import { getBilledCustomer } from '../customers/customers.service.ts';
import { HOSTED_PAGE_CSP, type HostedPageProblem, renderInvoicePage, renderProblemPage } from './hosted-page.ts';
import { findInvoiceRowByToken, toInvoice } from './invoices.lifecycle.ts';

/** The prefix of hosted invoice URLs: `<PUBLIC_URL>/i/<token>` (hostedInvoiceUrl). */
export const HOSTED_PAGE_PREFIX = '/i';

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

function sendPage(reply: FastifyReply, status: number, html: string): FastifyReply {
  return reply.code(status).headers(HOSTED_PAGE_HEADERS).send(html);
}

/**
 * Registers GET /i/:token (and HEAD) on `app`, a plugin context with the prefix
 * HOSTED_PAGE_PREFIX, plus that context's not-found and error handlers so that nothing under
 * /i ever answers JSON: a bad request (NUL, malformed token) is the 404 page, a rate limit the
 * 429 page (Retry-After kept), a failure the 500 page (logged).
 */
export async function registerHostedInvoicePages(app: FastifyInstance, deps: Deps): Promise<void> {
  const { businessName, publicUrl } = deps.config;
  const problems = new Map<HostedPageProblem, string>();
  const problemPage = (problem: HostedPageProblem) => {
    let html = problems.get(problem);
    if (html === undefined) problems.set(problem, (html = renderProblemPage(problem, businessName)));
    return html;
  };
  const notFound = (reply: FastifyReply) => sendPage(reply, 404, problemPage(404));

  app.setNotFoundHandler((_request, reply) => notFound(reply));
  app.setErrorHandler((error, request, reply) => {
    const { status } = errorResponse(error);
    if (status === 429) return sendPage(reply, 429, problemPage(429));
    if (status < 500) return notFound(reply);
    request.log.error({ err: error }, 'hosted invoice page failed');
    return sendPage(reply, 500, problemPage(500));
  });

  app.get<{ Params: { token: string } }>(
    '/:token',
    { config: { scope: 'public' }, schema: { hide: true } },
    async (request, reply) => {
      const row = await findInvoiceRowByToken(deps.db, request.params.token);
      if (!row) return notFound(reply);
      const customer = await getBilledCustomer(deps.db, row.customer_id);
      const html = renderInvoicePage({ invoice: toInvoice(row, publicUrl), customer, businessName });
      return sendPage(reply, 200, html);
    },
  );
}
