// The operator console at /console (SPEC §16): server-rendered pages over the same billing
// core and records the API routes call — every change here is one call of the function its
// API route calls, with no rule of its own. Registered by app.ts as its own plugin, outside
// the API's context: no API key, no JSON. Sign-in is a one-time link from `billing
// console-login` (modules/console-sessions); the session rides in an HttpOnly, SameSite=Strict
// cookie (console.session.ts). Every POST carries the session's CSRF token (403 otherwise); a
// read-only session is refused every POST but sign-out (403). Each action runs as its session
// (shared/actor.ts: its events carry `actor`) and is recorded in console_actions.
import { randomBytes } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Deps } from '../deps.ts';
import { AppError, errorResponse, ValidationError } from '../http/errors.ts';
import { keysetParams, parseListParams } from '../http/lists.ts';
import { namedPlugin } from '../http/route.ts';
import type { ApiKeyView } from '../modules/api-keys/api-keys.service.ts';
import { withActor } from '../shared/actor.ts';
import {
  type ConsoleSession,
  findLiveSession,
  listRecentConsoleActions,
  recordConsoleAction,
  redeemLoginLink,
  revokeSession,
} from '../modules/console-sessions/console-sessions.service.ts';
import { searchCustomers } from '../modules/customers/customers.search.ts';
import { getCustomerWithBalances, listCustomerBalanceTransactions } from '../billing/customers.ts';
import { listSubscriptions } from '../modules/subscriptions/subscriptions.service.ts';
import { getSubscriptionWithDiscount, cancelSubscription } from '../billing/subscriptions.ts';
import { changeSubscription, previewChange } from '../billing/plan-changes.ts';
import * as invoices from '../modules/invoices/invoices.service.ts';
import { getInvoicePdf } from '../modules/documents/documents.service.ts';
import { payInvoiceOutOfBand } from '../billing/pay-out-of-band.ts';
import { getPayment, listPayments, listRefunds } from '../modules/payments/payments.service.ts';
import { refundPayment, refundRequestKey } from '../billing/refunds.ts';
import { listCustomerPaymentMethods } from '../modules/payment-methods/payment-methods.service.ts';
import { getProviderEvent, listProviderEvents } from '../inbox/inbox.read.ts';
import { retryProviderEvent } from '../inbox/inbox.retry.ts';
import { advanceTestClock, getTestClock, listTestClocks } from '../modules/test-clocks/test-clocks.service.ts';
import { listCases } from '../modules/dunning/dunning.service.ts';
import { getEndpoint, listEndpoints } from '../modules/webhooks/webhooks.endpoints.ts';
import { listDeliveries, retryDelivery, sendTestEvent } from '../modules/webhooks/webhooks.deliveries.ts';
import { getPlan, listPlans } from '../modules/plans/plans.service.ts';
import { listCoupons } from '../modules/coupons/coupons.service.ts';
import { listTaxRates } from '../modules/tax-rates/tax-rates.service.ts';
import { createApiKey, listApiKeys, revokeApiKey } from '../modules/api-keys/api-keys.service.ts';
import { KEY_SCOPES } from '../db/tables/api-keys.table.ts';
import type { InboxStatus } from '../db/tables/provider-events.table.ts';
import type { DunningCaseStatus } from '../db/tables/dunning.table.ts';
import { PDF_HEADERS } from '../routes/pdf-response.ts';
import { readOverview } from './console.overview.ts';
import { invoiceCreditNotes, registerBillingPages } from './console.billing-pages.ts';
import {
  checkedId,
  CONSOLE_PREFIX,
  type ConsoleKit,
  type Form,
  type IdParams,
  keysetPage,
  linkTo,
  optionalText,
  PAGE_SIZE,
  wholeNumber,
} from './console.kit.ts';
import { listCustomerEvents } from '../modules/events/events.service.ts';
import { CONSOLE_CSP, type PageFrame, renderPage, STYLESHEET } from './console.render.ts';

export { CONSOLE_PREFIX };
import { clearedSessionCookie, csrfMatches, sessionCookie, sessionTokenOf } from './console.session.ts';

/** The headers of every console page: its CSP, no caching, no referrer, not indexed. */
const PAGE_HEADERS = {
  'content-type': 'text/html; charset=utf-8',
  'content-security-policy': CONSOLE_CSP,
  'cache-control': 'no-store',
  'referrer-policy': 'same-origin',
  'x-robots-tag': 'noindex, nofollow',
} as const;

/** Seconds between reloads of a page that shows work in progress (a test clock advancing). */
const PROGRESS_REFRESH_SECONDS = 2;
/** How long a new API key waits, held in memory, for the one page that shows it. */
const NEW_KEY_FLASH_MS = 5 * 60_000;
/** How many of a customer's events its page shows. */
const CUSTOMER_EVENTS = 20;

/** What a finished action says on the page it returns to; the query names a key, never text. */
const NOTICES: Readonly<Record<string, string>> = {
  voided: 'Invoice voided.',
  uncollectible: 'Invoice marked uncollectible.',
  paid: 'Invoice marked paid out of band.',
  refunded: 'Refund requested: pending until the provider confirms it.',
  retried: 'Provider event processed again.',
  advancing: 'Test clock advancing.',
  cancelled: 'Subscription cancelled.',
  changed: 'Subscription changed.',
  redelivered: 'Delivery due again.',
  tested: 'Test event queued.',
  revoked: 'API key revoked.',
  credited: 'Credit note issued.',
  credit_voided: 'Credit note voided.',
};

const INBOX_STATUSES: readonly InboxStatus[] = ['received', 'processed', 'ignored', 'held', 'failed'];
const DUNNING_STATUSES: readonly (DunningCaseStatus | 'all')[] = ['open', 'recovered', 'exhausted', 'cancelled', 'all'];

/**
 * Registers the console on `app`, a plugin context with the prefix CONSOLE_PREFIX: its
 * pages, its actions, the stylesheet, and the context's own not-found and error pages (no
 * answer here is JSON). Errors the operator can act on (400, 404, 409, 422) show their
 * message; anything else is logged and shown as a failure without detail.
 */
export async function registerConsole(app: FastifyInstance, deps: Deps): Promise<void> {
  const { db, clock, config } = deps;
  const sessions = new WeakMap<FastifyRequest, ConsoleSession>();
  const frameOf = (request: FastifyRequest, title: string): PageFrame => {
    const notice = (request.query as { notice?: unknown } | undefined)?.notice;
    return {
      title,
      session: sessions.get(request),
      testClocks: config.testClocks,
      notice: typeof notice === 'string' && Object.hasOwn(NOTICES, notice) ? NOTICES[notice] : undefined,
    };
  };
  const send = (reply: FastifyReply, status: number, html: string) =>
    reply.code(status).headers(PAGE_HEADERS).send(html);
  const page = (request: FastifyRequest, reply: FastifyReply, name: string, title: string, data: object = {}) =>
    send(reply, 200, renderPage(name, frameOf(request, title), data));
  const message = (
    request: FastifyRequest,
    reply: FastifyReply,
    status: number,
    heading: string,
    text: string,
    back?: string,
  ) =>
    send(
      reply,
      status,
      renderPage('message', { ...frameOf(request, heading), notice: undefined }, { heading, text, back }),
    );

  app.setNotFoundHandler((request, reply) => message(request, reply, 404, 'Not found', 'There is no such page.'));
  app.setErrorHandler((error, request, reply) => {
    const { status } = errorResponse(error);
    if (status >= 500) {
      request.log.error({ err: error }, 'console page failed');
      return message(request, reply, 500, 'Something went wrong', 'The request failed; it has been logged.');
    }
    const text = error instanceof AppError ? error.message : 'The request was not understood.';
    return message(request, reply, status, status === 404 ? 'Not found' : 'Not done', text);
  });

  // Forms post `application/x-www-form-urlencoded` (≤ 64 KiB); no other body type is taken.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'string', bodyLimit: 64 * 1024 },
    (_request, body, done) => {
      const form: Form = Object.create(null) as Form;
      for (const [key, value] of new URLSearchParams(body as string)) form[key] = value;
      done(null, form);
    },
  );

  // The console's headers replace the API's (set by http/security-headers.ts before this hook).
  app.addHook('onRequest', async (_request, reply) => {
    reply.headers(PAGE_HEADERS);
  });
  // The server's time for the answer (reads and rendering, before sending), for the operator's
  // browser tools and bench/console.ts.
  app.addHook('onSend', async (_request, reply) => {
    reply.header('server-timing', `app;dur=${reply.elapsedTime.toFixed(2)}`);
  });

  const config_ = { scope: 'public' as const, idempotency: false as const };
  const open = { config: config_, schema: { hide: true } };

  app.get('/static/console.css', open, async (_request, reply) =>
    reply
      .code(200)
      .headers({ 'content-type': 'text/css; charset=utf-8', 'cache-control': 'public, max-age=3600' })
      .send(STYLESHEET),
  );

  // The one-time link. It answers a page that moves on to /console by itself (meta refresh):
  // a redirect would be part of a navigation another site (a mail client) may have started,
  // and then the SameSite=Strict cookie would not be sent with it.
  // GET only: a HEAD (a link preview, a scanner) must not use the link up.
  app.get<{ Params: { token: string } }>(
    '/login/:token',
    { ...open, exposeHeadRoute: false },
    async (request, reply) => {
      const redeemed = await redeemLoginLink(db, clock, request.params.token);
      if (!redeemed) {
        return message(
          request,
          reply,
          401,
          'This sign-in link does not work',
          'It was used already, it expired (links last 15 minutes), or it never existed. Run `npx billing console-login` for a new one.',
        );
      }
      sessions.set(request, redeemed.session);
      reply.header('set-cookie', sessionCookie(request, config.publicUrl, redeemed.token));
      return page(request, reply, 'message', 'Signed in', {
        heading: 'Signed in',
        text: redeemed.session.readOnly ? 'Read-only session: you can look, not change.' : 'You can use the console.',
        back: CONSOLE_PREFIX,
        refreshSeconds: 0,
        refreshTo: CONSOLE_PREFIX,
      });
    },
  );

  // Everything below needs a live session.
  const signedInPages = async (signedIn: FastifyInstance) => {
    signedIn.addHook('preHandler', async (request, reply) => {
      const token = sessionTokenOf(request);
      const session =
        token === undefined ? undefined : await findLiveSession(db, clock, token, config.consoleIdleTimeoutMs);
      if (!session) {
        if (token !== undefined) reply.header('set-cookie', clearedSessionCookie(request, config.publicUrl));
        return message(
          request,
          reply,
          401,
          'Signed out',
          'Sign in with a one-time link: run `npx billing console-login` where the service runs, then open the link it prints.',
        );
      }
      sessions.set(request, session);
      if (request.method !== 'POST') return;
      const form = (request.body ?? {}) as Form;
      if (!csrfMatches(form._csrf, session.csrfToken)) {
        return message(
          request,
          reply,
          403,
          'Refused',
          'This form is out of date or did not come from the console; reload the page and try again.',
        );
      }
      if (session.readOnly && request.routeOptions.url !== `${CONSOLE_PREFIX}/sign-out`) {
        await recordConsoleAction(db, clock, {
          sessionId: session.id,
          action: request.routeOptions.url ?? request.url,
          targetId: (request.params as { id?: string }).id ?? null,
          outcome: 'refused',
          detail: 'read-only session',
        });
        return message(request, reply, 403, 'Refused', 'This session is read-only: it cannot change anything.');
      }
    });

    /**
     * Runs a console action as its session (events carry `actor`), records it, and answers
     * 303 to `then` with `notice`; a refusal (4xx) is recorded and shown with a link back.
     */
    const act = async (
      request: FastifyRequest,
      reply: FastifyReply,
      action: string,
      targetId: string,
      then: string,
      notice: string,
      run: (session: ConsoleSession) => Promise<unknown>,
    ) => {
      const session = sessions.get(request)!;
      try {
        await withActor({ type: 'console_session', id: session.id }, () => run(session));
      } catch (error) {
        const { status } = errorResponse(error);
        if (status >= 500 && !(error instanceof AppError)) throw error;
        const text = error instanceof AppError ? error.message : 'The request was not understood.';
        await recordConsoleAction(db, clock, {
          sessionId: session.id,
          action,
          targetId,
          outcome: 'refused',
          detail: text,
        });
        return message(request, reply, status, 'Not done', text, then);
      }
      await recordConsoleAction(db, clock, {
        sessionId: session.id,
        action,
        targetId,
        outcome: 'succeeded',
        detail: null,
      });
      return reply.code(303).header('location', linkTo(then, { notice })).send();
    };

    const kit: ConsoleKit = {
      sessionOf: (request) => sessions.get(request)!,
      page,
      message,
      act,
    };
    await registerBillingPages(signedIn, kit, deps);

    signedIn.get('/', open, async (request, reply) => {
      const [overview, actions] = await Promise.all([readOverview(db, clock), listRecentConsoleActions(db, 10)]);
      return page(request, reply, 'overview', 'Overview', { ...overview, actions });
    });

    signedIn.post('/sign-out', open, async (request, reply) => {
      await revokeSession(db, clock, sessions.get(request)!.id);
      sessions.delete(request);
      reply.header('set-cookie', clearedSessionCookie(request, config.publicUrl));
      return message(
        request,
        reply,
        200,
        'Signed out',
        'The session is over. Run `npx billing console-login` to sign in again.',
      );
    });

    // Customers: search by email or name prefix, keyset pages (customers.search.ts).
    signedIn.get<{ Querystring: { q?: string; by?: string; after?: string } }>(
      '/customers',
      open,
      async (request, reply) => {
        const query = (request.query.q ?? '').trim().slice(0, 254);
        const field = request.query.by === 'name' ? 'name' : 'email';
        const result = await searchCustomers(db, { query, field, cursor: request.query.after, limit: PAGE_SIZE });
        const next = result.next && linkTo(`${CONSOLE_PREFIX}/customers`, { q: query, by: field, after: result.next });
        return page(request, reply, 'customers', 'Customers', { customers: result.data, query, field, next });
      },
    );

    signedIn.get<IdParams>('/customers/:id', open, async (request, reply) => {
      const id = checkedId(request.params.id);
      // The newest 20 of each, as keyset first pages: no list counts its rows.
      const recent = keysetParams(parseListParams({ limit: '20' }), undefined);
      const customer = await getCustomerWithBalances(db, clock, id);
      const [subscriptions, invoiceList, payments, methods, balance, events] = await Promise.all([
        listSubscriptions(db, recent, { customer_id: id }),
        invoices.listInvoices(db, config.publicUrl, recent, { customer_id: id }),
        listPayments(db, recent, { customer_id: id }),
        listCustomerPaymentMethods(db, id, recent),
        listCustomerBalanceTransactions(db, id, recent),
        listCustomerEvents(db, id, CUSTOMER_EVENTS),
      ]);
      return page(request, reply, 'customer', customer.name ?? customer.email, {
        customer,
        subscriptions: subscriptions.data,
        invoices: invoiceList.data,
        payments: payments.data,
        methods: methods.data,
        balanceTransactions: balance.data,
        events,
      });
    });

    // Invoices: detail, PDF, void, mark uncollectible, paid out of band (the API's functions).
    signedIn.get<IdParams>('/invoices/:id', open, async (request, reply) => {
      const invoice = await invoices.getInvoice(db, config.publicUrl, checkedId(request.params.id));
      return page(request, reply, 'invoice', `Invoice ${invoice.number ?? invoice.id}`, {
        invoice,
        ...(await invoiceCreditNotes(deps, invoice.id)),
      });
    });
    signedIn.get<IdParams>('/invoices/:id/pdf', open, async (request, reply) => {
      const { filename, pdf } = await getInvoicePdf(db, config, checkedId(request.params.id));
      return reply
        .code(200)
        .headers({
          ...PDF_HEADERS,
          'content-disposition': `inline; filename="${filename}"`,
          'cache-control': 'no-store',
        })
        .send(pdf);
    });
    const invoicePath = (id: string) => `${CONSOLE_PREFIX}/invoices/${encodeURIComponent(id)}`;
    signedIn.post<IdParams>('/invoices/:id/void', open, async (request, reply) => {
      const id = checkedId(request.params.id);
      return act(request, reply, 'invoice.void', id, invoicePath(id), 'voided', () => invoices.voidInvoice(deps, id));
    });
    signedIn.post<IdParams>('/invoices/:id/mark-uncollectible', open, async (request, reply) => {
      const id = checkedId(request.params.id);
      return act(request, reply, 'invoice.mark_uncollectible', id, invoicePath(id), 'uncollectible', () =>
        invoices.markInvoiceUncollectible(deps, id),
      );
    });
    signedIn.post<IdParams>('/invoices/:id/pay', open, async (request, reply) => {
      const id = checkedId(request.params.id);
      return act(request, reply, 'invoice.pay_out_of_band', id, invoicePath(id), 'paid', async () => {
        const reference = optionalText(request.body as Form, 'reference', 200);
        return payInvoiceOutOfBand(db, deps, id, { paid_out_of_band: true, ...(reference ? { reference } : {}) });
      });
    });

    // Payments: detail and refund (billing/refunds.ts, as POST /api/payments/{id}/refund).
    signedIn.get<IdParams>('/payments/:id', open, async (request, reply) => {
      const payment = await getPayment(db, checkedId(request.params.id));
      const refunds = await listRefunds(db, parseListParams({ limit: '100' }), { payment_id: payment.id });
      return page(request, reply, 'payment', `Payment ${payment.id}`, {
        payment,
        refunds: refunds.data,
        formKey: randomBytes(16).toString('base64url'),
      });
    });
    signedIn.post<IdParams>('/payments/:id/refund', open, async (request, reply) => {
      const id = checkedId(request.params.id);
      const then = `${CONSOLE_PREFIX}/payments/${encodeURIComponent(id)}`;
      return act(request, reply, 'payment.refund', id, then, 'refunded', async (session) => {
        const form = request.body as Form;
        const amount = wholeNumber(form, 'amount', Number.MAX_SAFE_INTEGER);
        // The form's own key: submitting the same form twice resumes one refund, never makes two.
        const formKey = optionalText(form, 'form_key', 64);
        const key =
          formKey && refundRequestKey({ principalId: session.id, key: formKey, fingerprint: `${amount ?? 'all'}` });
        return refundPayment(deps, id, amount === undefined ? {} : { amount }, key ?? null);
      });
    });

    // Provider events: list, payload, retry (inbox/inbox.retry.ts, as the API's retry).
    signedIn.get<{ Querystring: { status?: string; after?: string } }>(
      '/provider-events',
      open,
      async (request, reply) => {
        const status = INBOX_STATUSES.find((value) => value === request.query.status);
        const events = await keysetPage(
          (params) => listProviderEvents(db, params, { status }),
          'received_at',
          request.query.after,
        );
        const next = events.next && linkTo(`${CONSOLE_PREFIX}/provider-events`, { status, after: events.next });
        return page(request, reply, 'provider-events', 'Provider events', {
          events: events.data,
          statuses: INBOX_STATUSES,
          status: status ?? '',
          next,
        });
      },
    );
    signedIn.get<IdParams>('/provider-events/:id', open, async (request, reply) => {
      const event = await getProviderEvent(db, checkedId(request.params.id));
      return page(request, reply, 'provider-event', `Provider event ${event.id}`, { event });
    });
    signedIn.post<IdParams>('/provider-events/:id/retry', open, async (request, reply) => {
      const id = checkedId(request.params.id);
      const then = `${CONSOLE_PREFIX}/provider-events/${encodeURIComponent(id)}`;
      return act(request, reply, 'provider_event.retry', id, then, 'retried', () =>
        retryProviderEvent(deps, id, request.log),
      );
    });

    // Dunning cases (read-only list).
    signedIn.get<{ Querystring: { status?: string; after?: string } }>('/dunning', open, async (request, reply) => {
      const status = DUNNING_STATUSES.find((value) => value === request.query.status) ?? 'open';
      const cases = await keysetPage(
        async (params) => {
          const list = await listCases(db, params, status);
          return { data: list.data, meta: { total: list.total, page: 0, limit: params.limit } };
        },
        'created_at',
        request.query.after,
      );
      const next = cases.next && linkTo(`${CONSOLE_PREFIX}/dunning`, { status, after: cases.next });
      return page(request, reply, 'dunning', 'Dunning cases', {
        cases: cases.data,
        statuses: DUNNING_STATUSES,
        status,
        next,
      });
    });

    // Webhook endpoints and their deliveries: retry one, send a test event.
    signedIn.get<{ Querystring: { after?: string } }>('/webhooks', open, async (request, reply) => {
      const endpoints = await keysetPage((params) => listEndpoints(db, params, {}), 'created_at', request.query.after);
      const next = endpoints.next && linkTo(`${CONSOLE_PREFIX}/webhooks`, { after: endpoints.next });
      return page(request, reply, 'webhooks', 'Webhook endpoints', { endpoints: endpoints.data, next });
    });
    signedIn.get<IdParams & { Querystring: { after?: string } }>('/webhooks/:id', open, async (request, reply) => {
      const endpoint = await getEndpoint(db, checkedId(request.params.id));
      const deliveries = await keysetPage(
        (params) => listDeliveries(db, endpoint.id, params, {}),
        'created_at',
        request.query.after,
      );
      const next = deliveries.next && linkTo(`${CONSOLE_PREFIX}/webhooks/${endpoint.id}`, { after: deliveries.next });
      return page(request, reply, 'webhook', `Webhook endpoint ${endpoint.id}`, {
        endpoint,
        deliveries: deliveries.data,
        next,
      });
    });
    const endpointPath = (id: string) => `${CONSOLE_PREFIX}/webhooks/${encodeURIComponent(id)}`;
    signedIn.post<IdParams>('/webhooks/:id/test', open, async (request, reply) => {
      const id = checkedId(request.params.id);
      return act(request, reply, 'webhook_endpoint.test', id, endpointPath(id), 'tested', () =>
        sendTestEvent(db, clock, id),
      );
    });
    signedIn.post<{ Params: { id: string; delivery: string } }>(
      '/webhooks/:id/deliveries/:delivery/retry',
      open,
      async (request, reply) => {
        const id = checkedId(request.params.id);
        const delivery = checkedId(request.params.delivery);
        return act(request, reply, 'webhook_delivery.retry', delivery, endpointPath(id), 'redelivered', () =>
          retryDelivery(db, clock, id, delivery),
        );
      },
    );

    // Subscriptions: cancel now; change plan or quantity with the preview shown first.
    signedIn.get<IdParams & { Querystring: { plan_id?: string; quantity?: string } }>(
      '/subscriptions/:id',
      open,
      async (request, reply) => {
        const subscription = await getSubscriptionWithDiscount(db, clock, checkedId(request.params.id));
        const plans = await listPlans(db, parseListParams({ limit: '100' }));
        const current = await getPlan(db, subscription.plan_id);
        const wanted = {
          plan_id: optionalText(request.query as Form, 'plan_id', 64),
          quantity: wholeNumber(request.query as Form, 'quantity', 1_000_000),
        };
        let preview;
        let previewError;
        if (wanted.plan_id !== undefined || wanted.quantity !== undefined) {
          try {
            preview = await previewChange(db, deps, { subscription_id: subscription.id, ...definedOnly(wanted) });
          } catch (error) {
            if (!(error instanceof AppError)) throw error;
            previewError = error.message;
          }
        }
        return page(request, reply, 'subscription', `Subscription ${subscription.id}`, {
          subscription,
          plans: plans.data.filter((plan) => plan.active && plan.currency === current.currency),
          wanted,
          preview,
          error: previewError,
        });
      },
    );
    const subscriptionPath = (id: string) => `${CONSOLE_PREFIX}/subscriptions/${encodeURIComponent(id)}`;
    signedIn.post<IdParams>('/subscriptions/:id/cancel', open, async (request, reply) => {
      const id = checkedId(request.params.id);
      return act(request, reply, 'subscription.cancel', id, subscriptionPath(id), 'cancelled', () =>
        cancelSubscription(db, deps, id, {}),
      );
    });
    signedIn.post<IdParams>('/subscriptions/:id/change', open, async (request, reply) => {
      const id = checkedId(request.params.id);
      return act(request, reply, 'subscription.change', id, subscriptionPath(id), 'changed', async () => {
        const form = request.body as Form;
        const change = definedOnly({
          plan_id: optionalText(form, 'plan_id', 64),
          quantity: wholeNumber(form, 'quantity', 1_000_000),
          // The preview's instant: the change then bills exactly the lines the operator saw.
          proration_date: optionalText(form, 'proration_date', 40),
        });
        return changeSubscription(db, deps, id, change);
      });
    });

    // Plans, coupons and tax rates: read-only lists.
    signedIn.get('/catalog', open, async (request, reply) => {
      const newest = parseListParams({ limit: '100' });
      const [plans, coupons, taxRates] = await Promise.all([
        listPlans(db, newest),
        listCoupons(db, clock, newest),
        listTaxRates(db, newest, {}),
      ]);
      return page(request, reply, 'catalog', 'Plans, coupons, tax rates', {
        plans: plans.data,
        coupons: coupons.data,
        taxRates: taxRates.data,
      });
    });

    // API keys: list, create, revoke. A new key's secret is held in memory for its session and
    // shown by the next GET of the page, once (POST, redirect, GET): a reload shows no key and
    // makes none.
    const newKeys = new Map<string, { created: ApiKeyView & { key: string }; until: number }>();
    const takeNewKey = (sessionId: string) => {
      const held = newKeys.get(sessionId);
      newKeys.delete(sessionId);
      for (const [id, entry] of newKeys) if (entry.until <= Date.now()) newKeys.delete(id);
      return held && held.until > Date.now() ? held.created : undefined;
    };
    signedIn.get<{ Querystring: { after?: string } }>('/api-keys', open, async (request, reply) => {
      const keys = await keysetPage((params) => listApiKeys(db, params), 'created_at', request.query.after);
      const next = keys.next && linkTo(`${CONSOLE_PREFIX}/api-keys`, { after: keys.next });
      const created = takeNewKey(sessions.get(request)!.id);
      return page(request, reply, 'api-keys', 'API keys', { keys: keys.data, scopes: KEY_SCOPES, created, next });
    });
    signedIn.post('/api-keys', open, async (request, reply) => {
      const session = sessions.get(request)!;
      const form = request.body as Form;
      let created: ApiKeyView & { key: string };
      try {
        const name = optionalText(form, 'name', 100);
        if (name === undefined) throw new ValidationError('name is required', 'name');
        const scope = KEY_SCOPES.find((value) => value === form.scope);
        if (scope === undefined) throw new ValidationError(`scope must be one of ${KEY_SCOPES.join(', ')}`, 'scope');
        created = await withActor({ type: 'console_session', id: session.id }, () =>
          createApiKey(db, clock, { name, scope, expiresAt: optionalText(form, 'expires_at', 40) ?? null }),
        );
      } catch (error) {
        if (!(error instanceof AppError)) throw error;
        await recordConsoleAction(db, clock, {
          sessionId: session.id,
          action: 'api_key.create',
          targetId: null,
          outcome: 'refused',
          detail: error.message,
        });
        return message(request, reply, error.status, 'Not done', error.message, `${CONSOLE_PREFIX}/api-keys`);
      }
      await recordConsoleAction(db, clock, {
        sessionId: session.id,
        action: 'api_key.create',
        targetId: created.id,
        outcome: 'succeeded',
        detail: null,
      });
      newKeys.set(session.id, { created, until: Date.now() + NEW_KEY_FLASH_MS });
      return reply.code(303).header('location', `${CONSOLE_PREFIX}/api-keys`).send();
    });
    signedIn.post<IdParams>('/api-keys/:id/revoke', open, async (request, reply) => {
      const id = checkedId(request.params.id);
      return act(request, reply, 'api_key.revoke', id, `${CONSOLE_PREFIX}/api-keys`, 'revoked', () =>
        revokeApiKey(db, clock, id),
      );
    });

    // Test clocks (TEST_CLOCKS=true only): list, and advance with the page following progress.
    if (config.testClocks) {
      signedIn.get<{ Querystring: { after?: string } }>('/test-clocks', open, async (request, reply) => {
        const clocks = await keysetPage((params) => listTestClocks(db, params), 'created_at', request.query.after);
        const next = clocks.next && linkTo(`${CONSOLE_PREFIX}/test-clocks`, { after: clocks.next });
        return page(request, reply, 'test-clocks', 'Test clocks', { clocks: clocks.data, next });
      });
      signedIn.get<IdParams>('/test-clocks/:id', open, async (request, reply) => {
        const testClock = await getTestClock(db, checkedId(request.params.id));
        const month = new Date(testClock.frozen_time);
        month.setUTCMonth(month.getUTCMonth() + 1);
        return page(request, reply, 'test-clock', `Test clock ${testClock.id}`, {
          clock: testClock,
          suggested: month.toISOString(),
          refreshSeconds: testClock.status === 'advancing' ? PROGRESS_REFRESH_SECONDS : undefined,
        });
      });
      signedIn.post<IdParams>('/test-clocks/:id/advance', open, async (request, reply) => {
        const id = checkedId(request.params.id);
        const then = `${CONSOLE_PREFIX}/test-clocks/${encodeURIComponent(id)}`;
        return act(request, reply, 'test_clock.advance', id, then, 'advancing', async () => {
          const target = optionalText(request.body as Form, 'frozen_time', 40);
          if (target === undefined || Number.isNaN(Date.parse(target)) || !/^\d{4}-\d\d-\d\dT/.test(target)) {
            throw new ValidationError(
              'frozen_time must be an ISO 8601 date-time such as 2026-04-15T10:00:00Z',
              'frozen_time',
            );
          }
          return advanceTestClock(db, clock, id, { frozen_time: target });
        });
      });
    }
  };
  await app.register(namedPlugin('console session', signedInPages));
}

/** `value` without its undefined fields (the services tell "absent" by the key). */
function definedOnly<T extends object>(value: T): { [K in keyof T]?: Exclude<T[K], undefined> } {
  return Object.fromEntries(Object.entries(value).filter(([, field]) => field !== undefined)) as never;
}
