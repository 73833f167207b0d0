// buildApp(deps): HTTP plumbing first, then every module's routes in ONE list.
import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import type { DestinationStream } from 'pino';
import type { Deps } from './deps.ts';
import { authenticate } from './modules/api-keys/api-keys.auth.ts';
import { AJV_PLUGINS } from './http/date-time-format.ts';
import { answerClientError, registerErrorHandling, routeFrameworkErrorsUnder } from './http/errors.ts';
import { registerIdempotency } from './modules/idempotency/idempotency.hooks.ts';
import { registerJsonBodyParser } from './http/json-body.ts';
import { registerTextGuard } from './http/text-guard.ts';
import { loggerOptions, requestLoggerFactory } from './http/logger.ts';
import { registerOpenApi } from './http/openapi.ts';
import { API_DOCUMENT } from './routes/api-document.ts';
import { registerRateLimits } from './http/rate-limit.ts';
import { registerResponseCache } from './http/response-cache.ts';
import { namedPlugin, type Route } from './http/route.ts';
import { SHARED_SCHEMAS } from './http/schemas.ts';
import { SCHEMA_CONTROLLER } from './http/serializer-compiler.ts';
import { registerSecurityHeaders } from './http/security-headers.ts';
import { apiKeyRoutes } from './routes/api-keys.routes.ts';
import { checkoutRoutes } from './routes/checkout.routes.ts';
import { refundRoutes } from './routes/refunds.routes.ts';
import { couponRoutes } from './routes/coupons.routes.ts';
import { creditNoteRoutes } from './routes/credit-notes.routes.ts';
import { customerRoutes } from './routes/customers.routes.ts';
import { EMAIL_FORMATS } from './modules/customers/customers.schemas.ts';
import { dunningRoutes } from './routes/dunning.routes.ts';
import { eventRoutes } from './routes/events.routes.ts';
import { healthRoutes } from './routes/health.routes.ts';
import { invoiceRoutes } from './routes/invoices.routes.ts';
import { HOSTED_PAGE_PREFIX, registerHostedInvoicePages } from './routes/invoices.page.routes.ts';
import { CREDIT_NOTE_PAGE_PREFIX, registerHostedCreditNotePages } from './routes/credit-notes.page.routes.ts';
import { invoicePayRoutes } from './routes/invoices.pay.routes.ts';
import { paymentMethodRoutes } from './routes/payment-methods.routes.ts';
import { paymentRoutes } from './routes/payments.routes.ts';
import { planRoutes } from './routes/plans.routes.ts';
import { portalSessionRoutes } from './routes/portal-sessions.routes.ts';
import { PORTAL_PREFIX, registerPortalPages } from './portal/portal.routes.ts';
import { taxRateRoutes } from './routes/tax-rates.routes.ts';
import { meterRoutes } from './routes/meters.routes.ts';
import { usageRoutes } from './routes/usage.routes.ts';
import { registerNotifyRoutes } from './routes/notify.routes.ts';
import { providerEventRoutes } from './routes/provider-events.routes.ts';
import { subscriptionRoutes } from './routes/subscriptions.routes.ts';
import { testClockRoutes } from './routes/test-clocks.routes.ts';
import { webhookRoutes } from './routes/webhooks.routes.ts';
import { CONSOLE_PREFIX, registerConsole } from './console/console.plugin.ts';
import { DATABASE_GAUGES } from './gauges.ts';
import { Metrics } from './observability/metrics.ts';
import { noticesClockReads } from './shared/clock-reads.ts';

export const BODY_LIMIT_BYTES = 1024 * 1024;
const REQUEST_ID = /^[\w.:-]{1,128}$/;
const MAX_PATH_PARAM_LENGTH = 16 * 1024;

/** Every API route, in one list (ARCHITECTURE "Style" 3). */
function allRoutes(deps: Deps): Route[] {
  return [
    ...healthRoutes(deps),
    ...customerRoutes(deps),
    ...paymentMethodRoutes(deps),
    ...planRoutes(deps),
    ...couponRoutes(deps),
    ...taxRateRoutes(deps),
    ...meterRoutes(deps),
    ...usageRoutes(deps),
    ...subscriptionRoutes(deps),
    ...paymentRoutes(deps),
    ...invoiceRoutes(deps),
    ...checkoutRoutes(deps),
    ...refundRoutes(deps),
    ...creditNoteRoutes(deps),
    ...invoicePayRoutes(deps),
    ...providerEventRoutes(deps),
    ...dunningRoutes(deps),
    ...webhookRoutes(deps),
    ...eventRoutes(deps),
    ...apiKeyRoutes(deps),
    ...testClockRoutes(deps),
    ...portalSessionRoutes(deps),
  ];
}

export interface AppOptions {
  /** Where logs go (default stdout); tests pass a stream to read them. */
  logStream?: DestinationStream;
  /** Metrics to record into (default: new ones with every database gauge); see `app.metrics`. */
  metrics?: Metrics;
  /**
   * Route schema compilers (default: Fastify's validators, http/serializer-compiler.ts's
   * serializers); tests share compiled schemas across the apps they build.
   */
  schemaController?: FastifyServerOptions['schemaController'];
}

/** Builds the Fastify app over `deps`. Call `ready()`/`listen()`; closing the app does not close deps. */
export async function buildApp(deps: Deps, options: AppOptions = {}): Promise<FastifyInstance> {
  const app = Fastify({
    logger: loggerOptions(deps.config.logLevel, options.logStream),
    childLoggerFactory: requestLoggerFactory,
    bodyLimit: BODY_LIMIT_BYTES,
    schemaController: options.schemaController ?? SCHEMA_CONTROLLER,
    requestIdHeader: false,
    genReqId: (request) => {
      const given = request.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
    ajv: {
      customOptions: {
        coerceTypes: false,
        removeAdditional: false,
        allErrors: false,
        // `idn-email` (RFC 6531) is the customers module's one email rule, not Ajv's ASCII one.
        formats: EMAIL_FORMATS,
      },
      // ajv-formats, then our `date-time` (bounds that hold at the epoch): http/date-time-format.ts.
      plugins: AJV_PLUGINS,
    },
    // While draining, server.ts answers requests on open connections 503 in the envelope.
    return503OnClosing: false,
    // Requests the router refuses are answered by the app like any other (http/errors.ts);
    // under /i, /c, /portal and /console by the pages' own 404 page.
    frameworkErrors: routeFrameworkErrorsUnder([
      HOSTED_PAGE_PREFIX,
      CREDIT_NOTE_PAGE_PREFIX,
      PORTAL_PREFIX,
      CONSOLE_PREFIX,
    ]),
    clientErrorHandler: answerClientError,
    // Path parameters of any length reach their route, whose schema answers (an id over 64
    // characters is 400, whatever its length); Node's 16 KiB header limit bounds the URL.
    routerOptions: { maxParamLength: MAX_PATH_PARAM_LENGTH },
  });
  app.decorateRequest('principal', undefined);
  // The request id header is set with the security headers, in one hook (security-headers.ts).
  registerErrorHandling(app);
  registerJsonBodyParser(app);
  registerTextGuard(app);
  const metrics = options.metrics ?? new Metrics(deps, app.log, { gauges: DATABASE_GAUGES });
  app.decorate('metrics', metrics);
  metrics.instrument(app);
  // Hook order matters: rate limits run before authentication (a flood of bad keys never
  // reaches the database), idempotency after it (keys are scoped per API key).
  await registerSecurityHeaders(app);
  await registerRateLimits(app, deps.config);
  registerIdempotency(app, deps);
  for (const schema of SHARED_SCHEMAS) app.addSchema(schema);
  await registerOpenApi(app, API_DOCUMENT);

  await app.register(
    namedPlugin('api', async (api: FastifyInstance) => {
      api.addHook('onRequest', authenticate(deps));
      registerResponseCache(api, {
        version: deps.database.commitVersion,
        // Without a clock that notes its reads, a response computed from "now" could be kept.
        maxBytes: noticesClockReads(deps.clock) ? deps.config.responseCacheBytes : 0,
      });
      for (const route of allRoutes(deps)) api.route(route);
      // POST /api/notify verifies provider signatures on the exact bytes: its own context
      // reads raw bodies, so the app's JSON parser never touches them.
      await api.register(namedPlugin('notify', async (raw: FastifyInstance) => registerNotifyRoutes(raw, deps)));
    }),
  );
  // The hosted invoice page (/i/:token): public HTML for people, outside the API's context.
  await app.register(
    namedPlugin('hosted invoice pages', async (pages: FastifyInstance) => registerHostedInvoicePages(pages, deps)),
    { prefix: HOSTED_PAGE_PREFIX },
  );
  // A credit note's hosted page (/c/:token), likewise.
  await app.register(
    namedPlugin('hosted credit note pages', async (pages: FastifyInstance) =>
      registerHostedCreditNotePages(pages, deps),
    ),
    { prefix: CREDIT_NOTE_PAGE_PREFIX },
  );
  // The customer portal (/portal): pages behind a link's cookie session, outside the API's context.
  await app.register(
    namedPlugin('portal', async (portal: FastifyInstance) => registerPortalPages(portal, deps)),
    { prefix: PORTAL_PREFIX },
  );
  // The operator console (/console): HTML pages with a cookie session, outside the API's context.
  await app.register(
    namedPlugin('console', async (console: FastifyInstance) => registerConsole(console, deps)),
    { prefix: CONSOLE_PREFIX },
  );
  return app;
}
