// POST /api/customers/{id}/portal-sessions: a link to the customer portal for one customer,
// valid one hour (SPEC §16). The route validates and documents; the portal-sessions module
// makes the link; the pages it opens are src/portal/.
import type { Deps } from '../deps.ts';
import { defineRoute, type Route } from '../http/route.ts';
import { API_KEY_SECURITY, errorResponses, idParams, responseOf } from '../http/schemas.ts';
import { createPortalSession } from '../modules/portal-sessions/portal-sessions.ts';
import { portalSessionBody, portalSessionSchema } from '../modules/portal-sessions/portal-sessions.schemas.ts';

/** POST /api/customers/{id}/portal-sessions (SPEC §16). */
export function portalSessionRoutes(deps: Deps): Route[] {
  return [
    defineRoute({
      method: 'POST',
      url: '/api/customers/:id/portal-sessions',
      schema: {
        tags: ['Customers'],
        security: API_KEY_SECURITY,
        operationId: 'createPortalSession',
        summary: 'Create a customer portal link',
        description:
          'A link for ONE customer to the customer portal (SPEC §16), valid one hour: their invoices (page and PDF, pay an open one), payment methods (remove, make default), subscriptions (cancel at period end, switch among `PORTAL_PLANS` with the preview shown first), in their `preferred_locale`. ' +
          'Opening it starts a browser session (an HttpOnly, SameSite=Strict cookie, Secure under HTTPS) that ends with the link. Only a hash of its token is kept: the `url` is shown once. ' +
          '`return_url`: an absolute http(s) URL the portal links back to. Unknown or deleted customer: 404.',
        params: idParams,
        body: portalSessionBody,
        response: {
          201: responseOf(portalSessionSchema, 'The link to send the customer to'),
          ...errorResponses(400, 401, 403, 404, 413, 415),
        },
      },
      handler: async (request, reply) =>
        reply
          .code(201)
          .send(
            await createPortalSession(
              deps.db,
              deps.clock,
              deps.config.publicUrl,
              request.params.id,
              request.body ?? {},
            ),
          ),
    }),
  ];
}
