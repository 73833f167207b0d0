// GET /i/{token}: the hosted invoice page (SPEC §9), public (no API key), HTML, never JSON.
// Registered by app.ts as its own plugin under the prefix /i, outside the API's context: no
// authentication, no response cache; rate limited per IP like every public route
// (http/rate-limit.ts). Every answer under /i is a page in the same style — the invoice, or
// one 404 for any unknown or malformed token, and 429 / 500 pages — with the same headers:
// a CSP allowing nothing but the page's own stylesheet and form, noindex, no referrer, no
// caching. Not in /openapi.json: it is a document for people, not part of the JSON API.
//
// GET /i/{token}.pdf is the same invoice as a PDF (SPEC §14 "Documents"), public like the page.
//
// POST /i/{token}/pay is the page's Pay button (SPEC §9 "Pay button"): the token is its only
// credential. It makes a checkout link through billing/checkout.ts exactly as POST
// /api/invoices/{id}/checkout does (DEFAULT_PROVIDER, the hosted page as callback), reusing a
// live link of the same amount, and answers 303 to the provider's page.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Deps } from '../deps.ts';
import { AppError, ProviderUnavailableError, StateConflictError } from '../http/errors.ts';
import { routeBudget } from '../http/rate-limit.ts';
import { createCheckoutLink } from '../billing/checkout.ts';
import { PROVIDER_DISPLAY_NAMES } from '../providers/provider-api.ts';
import { getBilledCustomer } from '../modules/customers/customers.service.ts';
import {
  CHECKOUT_ORIGINS,
  type HostedPageProblem,
  renderContinuePage,
  renderInvoicePage,
  renderProblemPage,
} from '../modules/documents/documents.hosted-page.ts';
import { documentLocale } from '../shared/locales.ts';
import { findInvoiceRowByToken, toInvoice } from '../modules/invoices/invoices.lifecycle.ts';
import type { InvoiceRow } from '../db/tables/invoices.table.ts';
import { invoicePdfOf, loadInvoiceDocument } from '../modules/documents/documents.service.ts';
import {
  answerWithProblemPages,
  HOSTED_PAGE_HEADERS,
  registerTokenDocumentRoutes,
  sendPage,
} from './hosted-documents.ts';

/** The prefix of hosted invoice URLs: `<PUBLIC_URL>/i/<token>` (hostedInvoiceUrl). */
export const HOSTED_PAGE_PREFIX = '/i';

/** Pay button presses per invoice token (POST /i/{token}/pay) in PAY_BUDGET_WINDOW_MS, on top of the per-IP budget. */
export const PAY_BUDGET = 10;
export const PAY_BUDGET_WINDOW_MS = 60_000;

/** `303 See Other` to `location`, with the page headers (no body). */
function seeOther(reply: FastifyReply, location: string): FastifyReply {
  return reply.code(303).headers(HOSTED_PAGE_HEADERS).header('location', location).send();
}

/**
 * True when the browser says the POST came from another site (`Sec-Fetch-Site: cross-site`
 * or `same-site`): a form elsewhere posting to a token it knows. `Origin` cannot tell: the
 * page's `no-referrer` policy makes our own form send `Origin: null`. Clients that send no
 * `Sec-Fetch-Site` (older browsers, curl) pass: the token is the credential.
 */
function fromAnotherSite(request: FastifyRequest): boolean {
  const site = request.headers['sec-fetch-site'];
  return site === 'cross-site' || site === 'same-site';
}

/** The origin of `url` when it is an absolute http(s) URL, else undefined. */
function httpOrigin(url: string): string | undefined {
  try {
    const parsed = new URL(url);
    return parsed.protocol === 'https:' || parsed.protocol === 'http:' ? parsed.origin : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Registers GET /i/:token (and HEAD) and POST /i/:token/pay on `app`, a plugin context with
 * the prefix HOSTED_PAGE_PREFIX, plus that context's not-found and error handlers so that
 * nothing under /i ever answers JSON: a bad request (NUL, malformed token, a body type other
 * than a form's) is the 404 page, a rate limit the 429 page (Retry-After kept), a failure the
 * 500 page (logged).
 */
export async function registerHostedInvoicePages(app: FastifyInstance, deps: Deps): Promise<void> {
  const { businessName, publicUrl, defaultProvider } = deps.config;
  // The Pay button collects through DEFAULT_PROVIDER, when it has an API key.
  const payProvider = deps.providers[defaultProvider] ? PROVIDER_DISPLAY_NAMES[defaultProvider] : undefined;
  const { notFound } = answerWithProblemPages<HostedPageProblem>(
    app,
    (problem) => renderProblemPage(problem, businessName),
    'hosted invoice page',
  );

  /** The invoice page of `row` with `status`: the Pay button when a provider can collect. */
  const invoicePage = async (reply: FastifyReply, status: number, row: InvoiceRow) => {
    const invoice = toInvoice(row, publicUrl);
    const pay =
      payProvider === undefined
        ? undefined
        : { action: `${pagePath(invoice.hosted_invoice_url ?? '')}/pay`, provider: payProvider };
    return sendPage(reply, status, renderInvoicePage(await loadInvoiceDocument(deps.db, deps.config, row, pay)));
  };

  /** The language of the customer invoice `row` is billed to: the words of its 503 and continue pages. */
  const languageOf = async (row: InvoiceRow) =>
    documentLocale((await getBilledCustomer(deps.db, row.customer_id))?.preferred_locale).language;

  // The page, and its PDF: the same content (SPEC §14 "Documents"). A draft has no token in
  // use, so no PDF here either (its PDF is GET /api/invoices/{id}/pdf).
  registerTokenDocumentRoutes(app, notFound, {
    find: (token) => findInvoiceRowByToken(deps.db, token),
    pdf: (row) => invoicePdfOf(deps.db, deps.config, row),
    page: (reply, row) => invoicePage(reply, 200, row),
  });

  // The Pay button's form posts `application/x-www-form-urlencoded` with no fields: the body
  // is read (at most 1 KiB) and ignored. It is the only body type here: the app's JSON parser,
  // inherited by this context, goes, so a JSON POST (a script, not the button) is a 415,
  // answered 404 like any other body type. A POST with no body at all (curl) still passes.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'string', bodyLimit: 1024 },
    (_request, _body, done) => done(null, undefined),
  );
  const payBudget = routeBudget(app, {
    max: PAY_BUDGET,
    windowMs: PAY_BUDGET_WINDOW_MS,
    key: (request) => `pay:${(request.params as { token: string }).token}`,
  });

  app.post<{ Params: { token: string } }>(
    '/:token/pay',
    { config: { scope: 'public', idempotency: false }, schema: { hide: true } },
    async (request, reply) => {
      const row = await findInvoiceRowByToken(deps.db, request.params.token);
      if (!row) return notFound(reply);
      // Numbered (findInvoiceRowByToken): it has a hosted URL.
      const page = pagePath(toInvoice(row, publicUrl).hosted_invoice_url ?? '');
      // Another site's form: nothing is made; the customer sees the invoice and decides.
      if (fromAnotherSite(request)) return seeOther(reply, page);
      await payBudget(request, reply);
      // No button was shown: the page again. Whether the invoice can be paid is checkout.ts's rule.
      if (!payProvider) return invoicePage(reply, 409, row);
      try {
        const link = await createCheckoutLink(deps, row.id, {}, { reuseLiveLink: true });
        const origin = httpOrigin(link.url);
        if (origin === undefined) throw new ProviderUnavailableError('the provider answered no usable link', null);
        // A checkout host outside the CSP's form-action (a custom domain) would be refused by the browser.
        if ((CHECKOUT_ORIGINS as readonly string[]).includes(origin)) return seeOther(reply, link.url);
        const provider = PROVIDER_DISPLAY_NAMES[link.provider];
        return sendPage(reply, 200, renderContinuePage(link.url, provider, businessName, await languageOf(row)));
      } catch (error) {
        if (error instanceof StateConflictError) {
          const now = await findInvoiceRowByToken(deps.db, request.params.token);
          return now ? invoicePage(reply, 409, now) : notFound(reply);
        }
        // No usable answer (503), or the provider refused the key or the request (422): the
        // customer can only try again later; the reason is logged for the business.
        if (
          error instanceof ProviderUnavailableError ||
          (error instanceof AppError && error.code === 'invalid_state')
        ) {
          request.log.warn({ err: error, invoice_id: row.id }, 'pay button: no checkout link');
          return sendPage(reply, 503, renderProblemPage(503, businessName, page, await languageOf(row)));
        }
        throw error;
      }
    },
  );
}

/** The path of a hosted invoice URL (`<PUBLIC_URL>/i/<token>`), which PUBLIC_URL may prefix. */
function pagePath(hostedInvoiceUrl: string): string {
  return new URL(hostedInvoiceUrl).pathname;
}
