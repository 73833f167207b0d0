// The customer portal (SPEC §16): server-rendered pages under /portal for ONE customer, behind
// a browser session that a portal link starts (POST /api/customers/{id}/portal-sessions,
// modules/portal-sessions). Registered by app.ts as its own plugin under the prefix /portal,
// outside the API's context: no API key, no response cache; rate limited per IP like every
// public route. Every answer is a page with the portal's headers (PORTAL_CSP, noindex, no
// caching) — a page, or one 404 for anything unknown — never JSON.
//
// Safety: the session's customer is the only customer. Every id in a path is looked up and
// then compared with the session's customer; another customer's invoice, subscription or
// payment method is the same 404 as an id that does not exist (no oracle). Every form carries
// the session's CSRF token and every POST checks it; the cookie is HttpOnly, SameSite=Strict,
// Secure when PUBLIC_URL is https, scoped to /portal.
//
// What each action does is the billing core's or a record's, never decided here: paying goes
// to the hosted invoice page's Pay button (POST /i/{token}/pay, invoices.page.routes.ts, by a
// 307 that keeps the POST); cancelling is cancelSubscription with `at_period_end`; switching
// plan is previewChange, then changeSubscription with what the preview showed; payment
// methods go through the payment-methods service.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { parseCookie, stringifySetCookie } from 'cookie';
import { createPaymentMethodSetup } from '../billing/payment-method-setup.ts';
import type { Deps } from '../deps.ts';
import { AppError, errorResponse } from '../http/errors.ts';
import { cancelSubscription } from '../billing/subscriptions.ts';
import { changeSubscription, previewChange } from '../billing/plan-changes.ts';
import { getCustomer } from '../modules/customers/customers.service.ts';
import type { Customer } from '../modules/customers/customers.schemas.ts';
import { findInvoiceRow, toInvoice } from '../modules/invoices/invoices.lifecycle.ts';
import { listInvoices } from '../modules/invoices/invoices.service.ts';
import {
  detachCustomerPaymentMethod,
  listCustomerPaymentMethods,
  updateCustomerPaymentMethod,
} from '../modules/payment-methods/payment-methods.service.ts';
import { findPlan, toPlan } from '../modules/plans/plans.service.ts';
import type { Plan } from '../modules/plans/plans.schemas.ts';
import {
  csrfTokenMatches,
  csrfTokenOf,
  findPortalLogin,
  openPortalSession,
  type PortalLogin,
} from '../modules/portal-sessions/portal-sessions.ts';
import { getSubscription, listSubscriptions } from '../modules/subscriptions/subscriptions.service.ts';
import type { Subscription } from '../modules/subscriptions/subscriptions.lifecycle.ts';
import {
  PORTAL_NOTICES,
  type PortalNotice,
  type PortalProblem,
} from '../modules/documents/documents.portal-messages.ts';
import { documentLocale, type DocumentLocale } from '../shared/locales.ts';
import type { ListParams } from '../http/lists.ts';
import {
  PORTAL_CSP,
  PORTAL_STYLESHEET,
  PORTAL_STYLESHEET_PATH,
  type PortalFrame,
  type PortalSubscription,
  renderPortalChange,
  renderPortalHome,
  renderPortalOpening,
  renderPortalProblem,
} from './portal.views.ts';

/** The prefix of every portal page. */
export const PORTAL_PREFIX = '/portal';

/** The session cookie's name. */
export const PORTAL_COOKIE = 'portal_session';

/** The headers of every portal page: they replace the API's CSP (http/security-headers.ts). */
export const PORTAL_HEADERS = {
  'content-type': 'text/html; charset=utf-8',
  'content-security-policy': PORTAL_CSP,
  'x-robots-tag': 'noindex, nofollow',
  'referrer-policy': 'same-origin',
  'cache-control': 'no-store',
} as const;

/** Invoices, subscriptions and payment methods the overview shows: the newest of each. */
const SHOWN = 100;
const NEWEST: ListParams = { page: 0, limit: SHOWN, offset: 0, sortBy: 'created_at', sortOrder: 'desc' };

/** A form body's fields (application/x-www-form-urlencoded, at most FORM_LIMIT_BYTES). */
const FORM_LIMIT_BYTES = 4096;

/** A live session, its customer and how its pages speak. */
interface PortalContext {
  token: string;
  login: PortalLogin;
  customer: Customer;
  locale: DocumentLocale;
  frame: PortalFrame;
}

function sendPage(reply: FastifyReply, status: number, html: string): FastifyReply {
  return reply.code(status).headers(PORTAL_HEADERS).send(html);
}

function seeOther(reply: FastifyReply, location: string, status: 303 | 307 = 303): FastifyReply {
  return reply.code(status).headers(PORTAL_HEADERS).header('location', location).send();
}

function formOf(request: FastifyRequest): URLSearchParams {
  return new URLSearchParams(typeof request.body === 'string' ? request.body : '');
}

/**
 * Registers the portal's pages on `app`, a plugin context with the prefix PORTAL_PREFIX (SPEC
 * §16): GET /open/:token (a link: sets the session cookie), GET / (the overview), the
 * stylesheet, POST /invoices/:id/pay, POST /subscriptions/:id/cancel, GET and POST
 * /subscriptions/:id/change (preview, then confirm), POST /payment-methods/:id/default and
 * /remove. Its own not-found and error handlers answer pages: 404 for anything unknown or
 * malformed, 409 for an action the billing rules refuse, 429, 500 (logged).
 */
export async function registerPortalPages(app: FastifyInstance, deps: Deps): Promise<void> {
  const { db, config } = deps;
  const { businessName, publicUrl } = config;
  const secure = publicUrl.startsWith('https:');
  const payable = deps.providers[config.defaultProvider] !== undefined;
  const english: PortalFrame = { locale: documentLocale(null), businessName };
  const unknown = (reply: FastifyReply, frame: PortalFrame = english) =>
    sendPage(reply, 404, renderPortalProblem('unknown', frame));
  const problem = (reply: FastifyReply, status: number, kind: PortalProblem, frame: PortalFrame) =>
    sendPage(reply, status, renderPortalProblem(kind, frame, { href: PORTAL_PREFIX, external: false }));

  app.setNotFoundHandler((_request, reply) => unknown(reply));
  app.setErrorHandler((error, request, reply) => {
    const { status } = errorResponse(error);
    // Set once a handler has its session: only then did an action reach the billing core.
    const inAction = (request as FastifyRequest & { portalFrame?: PortalFrame }).portalFrame;
    const frame = inAction ?? english;
    if (status === 429) return sendPage(reply, 429, renderPortalProblem(429, frame));
    // A request refused before any handler ran (NUL, a body type or size) is a page not found.
    if (status === 404 || inAction === undefined) {
      if (status < 500) return unknown(reply, frame);
    } else if (status < 500) {
      // A rule of the billing core refused the action (a state, a conflict, a bad value): nothing changed.
      return problem(reply, 409, 'refused', frame);
    }
    request.log.error({ err: error }, 'customer portal page failed');
    return sendPage(reply, 500, renderPortalProblem(500, frame));
  });
  app.removeAllContentTypeParsers();
  app.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'string', bodyLimit: FORM_LIMIT_BYTES },
    (_request, body, done) => done(null, body),
  );

  /**
   * The live session of `request`'s cookie with its customer, or undefined after answering:
   * the expired page (with the link's return_url) or the unknown page. A deleted customer's
   * session is unknown.
   */
  const sessionOf = async (request: FastifyRequest, reply: FastifyReply): Promise<PortalContext | undefined> => {
    const header = request.headers.cookie;
    const token = header === undefined ? undefined : parseCookie(header)[PORTAL_COOKIE];
    const found = await findPortalLogin(db, deps.clock, token);
    if (found.kind === 'expired') {
      sendPage(reply, 410, expiredPage(found.returnUrl));
      return undefined;
    }
    if (found.kind === 'unknown') {
      unknown(reply);
      return undefined;
    }
    let customer: Customer;
    try {
      customer = await getCustomer(db, found.login.customerId);
    } catch (error) {
      if (error instanceof AppError && error.status === 404) {
        unknown(reply);
        return undefined;
      }
      throw error;
    }
    const locale = documentLocale(customer.preferred_locale);
    const frame: PortalFrame = {
      locale,
      businessName,
      customerName: customer.name ?? customer.email,
      returnUrl: found.login.returnUrl,
    };
    (request as FastifyRequest & { portalFrame?: PortalFrame }).portalFrame = frame;
    return { token: found.token, login: found.login, customer, locale, frame };
  };

  /** The session of a POST whose form carries its CSRF token; else undefined after answering (stale form: 403). */
  const postingSession = async (request: FastifyRequest, reply: FastifyReply) => {
    const session = await sessionOf(request, reply);
    if (session === undefined) return undefined;
    if (!csrfTokenMatches(session.token, formOf(request).get('csrf'))) {
      problem(reply, 403, 'stale', session.frame);
      return undefined;
    }
    return session;
  };

  const expiredPage = (returnUrl: string | null) =>
    renderPortalProblem('expired', english, returnUrl === null ? undefined : { href: returnUrl, external: true });

  /** Subscription `id` when it is the session's customer's, else undefined (the caller answers 404). */
  const ownSubscription = async (session: PortalContext, id: string): Promise<Subscription | undefined> => {
    try {
      const subscription = await getSubscription(db, id);
      return subscription.customer_id === session.customer.id ? subscription : undefined;
    } catch (error) {
      if (error instanceof AppError && error.status === 404) return undefined;
      throw error;
    }
  };

  /** The plans of PORTAL_PLANS that exist and are active, in the configured order. */
  const portalPlans = async (): Promise<Plan[]> => {
    const plans: Plan[] = [];
    for (const id of config.portalPlans) {
      const row = await findPlan(db, id);
      if (row && row.active) plans.push(toPlan(row));
    }
    return plans;
  };

  /** The plan `planId` when PORTAL_PLANS offers it to `subscription` (same currency, not its own). */
  const offeredPlan = async (subscription: Subscription, planId: string | null | undefined, current: Plan) => {
    if (!planId || !config.portalPlans.includes(planId) || planId === subscription.plan_id) return undefined;
    const row = await findPlan(db, planId);
    return row && row.active && row.currency === current.currency ? toPlan(row) : undefined;
  };

  const planOf = async (subscription: Subscription): Promise<Plan> => {
    const row = await findPlan(db, subscription.plan_id);
    if (!row) throw new Error(`plan ${subscription.plan_id} of subscription ${subscription.id} is missing`);
    return toPlan(row);
  };

  const switchable = (s: Subscription) =>
    (s.status === 'active' || s.status === 'trialing') && !s.cancel_at_period_end && s.pending_update === null;

  app.get(
    `/${PORTAL_STYLESHEET_PATH.slice(PORTAL_PREFIX.length + 1)}`,
    { config: { scope: 'public' }, schema: { hide: true } },
    async (_request, reply) =>
      reply
        .code(200)
        .headers({ 'content-type': 'text/css; charset=utf-8', 'cache-control': 'public, max-age=31536000, immutable' })
        .send(PORTAL_STYLESHEET),
  );

  // Opening a link: the session's cookie, then a page that navigates to the portal by itself.
  // Not a 303: a link followed from another site (an email, the app) is a cross-site
  // navigation, and a browser may withhold a SameSite=Strict cookie from every request of
  // that redirect chain; the page's own navigation is same-site.
  app.get<{ Params: { token: string } }>(
    '/open/:token',
    { config: { scope: 'public' }, schema: { hide: true } },
    async (request, reply) => {
      const opened = await openPortalSession(db, deps.clock, request.params.token);
      if (opened.kind === 'unknown') return unknown(reply);
      if (opened.kind === 'expired') return sendPage(reply, 410, expiredPage(opened.returnUrl));
      const customer = await getCustomer(db, opened.login.customerId).catch(() => undefined);
      if (customer === undefined) return unknown(reply);
      const maxAge = Math.max(1, Math.floor((Date.parse(opened.login.expiresAt) - deps.clock.now().getTime()) / 1000));
      reply.header(
        'set-cookie',
        stringifySetCookie({
          name: PORTAL_COOKIE,
          value: opened.token,
          path: PORTAL_PREFIX,
          httpOnly: true,
          sameSite: 'strict',
          secure,
          maxAge,
        }),
      );
      const frame = { locale: documentLocale(customer.preferred_locale), businessName };
      return sendPage(reply, 200, renderPortalOpening(frame));
    },
  );

  app.get<{ Querystring: { done?: string } }>(
    '/',
    { config: { scope: 'public' }, schema: { hide: true } },
    async (request, reply) => {
      const session = await sessionOf(request, reply);
      if (session === undefined) return reply;
      const customerId = session.customer.id;
      const [invoices, subscriptions, methods, offered] = await Promise.all([
        listInvoices(db, publicUrl, NEWEST, { customer_id: customerId }),
        listSubscriptions(db, NEWEST, { customer_id: customerId }),
        listCustomerPaymentMethods(db, customerId, NEWEST),
        portalPlans(),
      ]);
      const shown: PortalSubscription[] = [];
      for (const subscription of subscriptions.data) {
        const plan = await planOf(subscription);
        shown.push({
          subscription,
          plan,
          switchTo: switchable(subscription)
            ? offered.filter((p) => p.id !== plan.id && p.currency === plan.currency)
            : [],
          cancellable: switchable(subscription),
        });
      }
      const done = request.query.done;
      const html = renderPortalHome({
        ...session.frame,
        csrf: csrfTokenOf(session.token),
        notice: (PORTAL_NOTICES as readonly string[]).includes(done ?? '') ? (done as PortalNotice) : undefined,
        // Drafts have no page yet (SPEC §12 "Drafts").
        invoices: invoices.data
          .filter((invoice) => invoice.status !== 'draft' && invoice.hosted_invoice_url !== null)
          .map((invoice) => ({
            invoice,
            payPath:
              payable && invoice.status === 'open' && invoice.amount_remaining > 0
                ? `${PORTAL_PREFIX}/invoices/${invoice.id}/pay`
                : undefined,
          })),
        subscriptions: shown,
        methods: methods.data,
        addMethodPath: payable ? `${PORTAL_PREFIX}/payment-methods/add` : undefined,
        expiresAt: session.login.expiresAt,
      });
      return sendPage(reply, 200, html);
    },
  );

  // Paying is the hosted page's Pay button: a 307 repeats this POST there, where
  // billing/checkout.ts makes (or reuses) the checkout link and answers 303 to the provider.
  app.post<{ Params: { id: string } }>(
    '/invoices/:id/pay',
    { config: { scope: 'public', idempotency: false }, schema: { hide: true } },
    async (request, reply) => {
      const session = await postingSession(request, reply);
      if (session === undefined) return reply;
      const row = await findInvoiceRow(db, request.params.id);
      if (!row || row.customer_id !== session.customer.id || row.status === 'draft')
        return unknown(reply, session.frame);
      const hosted = toInvoice(row, publicUrl).hosted_invoice_url;
      if (hosted === null) return unknown(reply, session.frame);
      return seeOther(reply, `${new URL(hosted).pathname}/pay`, 307);
    },
  );

  app.post<{ Params: { id: string } }>(
    '/subscriptions/:id/cancel',
    { config: { scope: 'public', idempotency: false }, schema: { hide: true } },
    async (request, reply) => {
      const session = await postingSession(request, reply);
      if (session === undefined) return reply;
      if (!(await ownSubscription(session, request.params.id))) return unknown(reply, session.frame);
      await cancelSubscription(db, deps, request.params.id, { at_period_end: true });
      return seeOther(reply, `${PORTAL_PREFIX}?done=cancelled`);
    },
  );

  // The preview first (SPEC §16): what the change would invoice, and a form to confirm it.
  app.get<{ Params: { id: string }; Querystring: { plan_id?: string } }>(
    '/subscriptions/:id/change',
    { config: { scope: 'public' }, schema: { hide: true } },
    async (request, reply) => {
      const session = await sessionOf(request, reply);
      if (session === undefined) return reply;
      const subscription = await ownSubscription(session, request.params.id);
      if (!subscription) return unknown(reply, session.frame);
      const from = await planOf(subscription);
      const to = await offeredPlan(subscription, request.query.plan_id, from);
      if (!to) return unknown(reply, session.frame);
      const preview = await previewChange(db, deps, { subscription_id: subscription.id, plan_id: to.id });
      // No proration instant: the renewal after the change — a trial's swap (now) or a downgrade waiting for the period end.
      const scheduledFor =
        preview.proration_date === null && subscription.status === 'active'
          ? (subscription.current_period_end ?? undefined)
          : undefined;
      const html = renderPortalChange({
        ...session.frame,
        csrf: csrfTokenOf(session.token),
        subscription,
        from,
        to,
        preview,
        scheduledFor,
      });
      return sendPage(reply, 200, html);
    },
  );

  // The confirm: PATCH's logic with the plan and the proration instant the preview showed, so
  // the change invoices what the customer saw.
  app.post<{ Params: { id: string } }>(
    '/subscriptions/:id/change',
    { config: { scope: 'public', idempotency: false }, schema: { hide: true } },
    async (request, reply) => {
      const session = await postingSession(request, reply);
      if (session === undefined) return reply;
      const subscription = await ownSubscription(session, request.params.id);
      if (!subscription) return unknown(reply, session.frame);
      const form = formOf(request);
      const to = await offeredPlan(subscription, form.get('plan_id'), await planOf(subscription));
      if (!to) return unknown(reply, session.frame);
      const prorationDate = form.get('proration_date');
      const after = await changeSubscription(db, deps, subscription.id, {
        plan_id: to.id,
        ...(prorationDate ? { proration_date: prorationDate } : {}),
      });
      return seeOther(reply, `${PORTAL_PREFIX}?done=${after.pending_update === null ? 'changed' : 'scheduled'}`);
    },
  );

  // Adding a method (SPEC §10 "Adding a method"): the provider's page for the session's
  // customer, never another's; its signed event saves the method. Back to the overview after.
  app.post(
    '/payment-methods/add',
    { config: { scope: 'public', idempotency: false }, schema: { hide: true } },
    async (request, reply) => {
      const session = await postingSession(request, reply);
      if (session === undefined) return reply;
      const link = await createPaymentMethodSetup(deps, session.customer.id, {
        return_url: `${publicUrl}${PORTAL_PREFIX}`,
      });
      return seeOther(reply, link.url);
    },
  );

  app.post<{ Params: { id: string } }>(
    '/payment-methods/:id/default',
    { config: { scope: 'public', idempotency: false }, schema: { hide: true } },
    async (request, reply) => {
      const session = await postingSession(request, reply);
      if (session === undefined) return reply;
      // Scoped by the session's customer: another customer's method is not found (404).
      await updateCustomerPaymentMethod(db, deps.clock, session.customer.id, request.params.id, { default: true });
      return seeOther(reply, `${PORTAL_PREFIX}?done=default`);
    },
  );

  app.post<{ Params: { id: string } }>(
    '/payment-methods/:id/remove',
    { config: { scope: 'public', idempotency: false }, schema: { hide: true } },
    async (request, reply) => {
      const session = await postingSession(request, reply);
      if (session === undefined) return reply;
      await detachCustomerPaymentMethod(db, deps.clock, session.customer.id, request.params.id);
      return seeOther(reply, `${PORTAL_PREFIX}?done=removed`);
    },
  );
}
