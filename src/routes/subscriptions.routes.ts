// /api/subscriptions: create, list, get, cancel, pause, resume (SPEC §3, §4).
import type { Deps } from '../deps.ts';
import { type ListQueryInput, listQuerySchema, parseListParams } from '../http/lists.ts';
import { defineRoute, type Route } from '../http/route.ts';
import { API_KEY_SECURITY, errorResponses, idParams, responseOf } from '../http/schemas.ts';
import { SUBSCRIPTION_STATUSES, type SubscriptionStatus } from '../modules/subscriptions/subscriptions.status.ts';
import {
  cancelBody,
  createSubscriptionBody,
  subscriptionDetailSchema,
  subscriptionListSchema,
  subscriptionSchema,
} from '../modules/subscriptions/subscriptions.schemas.ts';
import * as service from '../modules/subscriptions/subscriptions.service.ts';
import * as billing from '../billing/subscriptions.ts';
import { cancelPendingUpdate, changeSubscription } from '../billing/plan-changes.ts';
import { CANNOT_CHANGE } from '../billing/plan-change-rules.ts';
import { changeSubscriptionBody } from '../billing/plan-changes.schemas.ts';

const common = { tags: ['Subscriptions'], security: API_KEY_SECURITY };
const stateChangeResponses = {
  200: responseOf(subscriptionSchema, 'The subscription in its new state'),
  ...errorResponses(400, 401, 403, 404, 409, 415),
};

/** Routes of the subscriptions module. */
export function subscriptionRoutes(deps: Deps): Route[] {
  const { db, clock } = deps;
  return [
    defineRoute({
      method: 'POST',
      url: '/api/subscriptions',
      schema: {
        ...common,
        operationId: 'createSubscription',
        summary: 'Create a subscription',
        description:
          '`trialing` when trial days (request, else plan) are above 0; otherwise `incomplete` until the first payment, in its first period `[created_at, +interval]` with the invoice of that period (due at once; `invoice.created`). Periods follow `billing_cycle_anchor` (creation, or the trial end). Emits `subscription.created`.',
        body: createSubscriptionBody,
        response: {
          201: responseOf(subscriptionSchema, 'The new subscription'),
          ...errorResponses(400, 401, 403, 404, 413, 415, 422),
        },
      },
      handler: async (request, reply) => reply.code(201).send(await billing.createSubscription(db, deps, request.body)),
    }),
    defineRoute<{ Querystring: ListQueryInput & { customer_id?: string; status?: SubscriptionStatus } }>({
      method: 'GET',
      url: '/api/subscriptions',
      schema: {
        ...common,
        operationId: 'listSubscriptions',
        summary: 'List subscriptions',
        querystring: listQuerySchema(service.SUBSCRIPTION_SORT_FIELDS, {
          customer_id: { type: 'string', maxLength: 64 },
          status: { type: 'string', enum: [...SUBSCRIPTION_STATUSES] },
        }),
        response: {
          200: responseOf(subscriptionListSchema, 'A page of subscriptions'),
          ...errorResponses(400, 401, 403),
        },
      },
      handler: async (request) => {
        const { customer_id, status } = request.query;
        return service.listSubscriptions(db, parseListParams(request.query), { customer_id, status });
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/api/subscriptions/:id',
      schema: {
        ...common,
        operationId: 'getSubscription',
        summary: 'Get a subscription',
        params: idParams,
        response: {
          200: responseOf(subscriptionDetailSchema, 'The subscription and its discount'),
          ...errorResponses(401, 403, 404),
        },
      },
      handler: async (request) => billing.getSubscriptionWithDiscount(db, deps.clock, request.params.id),
    }),
    defineRoute({
      method: 'PATCH',
      url: '/api/subscriptions/:id',
      schema: {
        ...common,
        operationId: 'updateSubscription',
        summary: 'Change the plan, quantity, discount or tax rates',
        description: `From \`trialing\` or \`active\` (else 409 \`validation_error\` "${CANNOT_CHANGE}"; 409 \`conflict\` while another request is changing it). The new plan must be active and in the same currency (400). Upgrades apply now with an invoice of the prorated difference (\`always_invoice\`); downgrades are scheduled for the period end (\`pending_update\`, \`subscription.update_scheduled\`); an interval change starts a new period now and credits the unused time; in a trial the plan is swapped with no proration. Prorations follow Stripe's formula to the second. Emits \`subscription.updated\` with \`previous_attributes\`. Preview it first with POST /api/invoices/preview. \`coupon\` / \`promotion_code\` replace the subscription's discount (redeemed under the same limits as on create: an unknown, expired or exhausted one is 400 and nothing changes; \`coupon: null\` or \`""\` removes it) and \`tax_rate_ids\` replaces its tax rates (\`[]\` clears them), SPEC §14: alone they change nothing else (any subscription not ended; no plan change rule runs), with a plan change both apply in one transaction and one \`subscription.updated\` whose \`previous_attributes\` carries the old \`discount\` and \`tax_rate_ids\` too. The next invoice takes them.`,
        params: idParams,
        body: changeSubscriptionBody,
        response: {
          ...stateChangeResponses,
          200: responseOf(subscriptionDetailSchema, 'The subscription in its new state, with its discount (as GET)'),
        },
      },
      handler: async (request) => changeSubscription(db, deps, request.params.id, request.body),
    }),
    defineRoute({
      method: 'DELETE',
      url: '/api/subscriptions/:id/pending-update',
      schema: {
        ...common,
        operationId: 'cancelPendingUpdate',
        summary: 'Cancel a scheduled change',
        description:
          '`pending_update` becomes null (`subscription.updated` with `previous_attributes`). 409 `validation_error` when none is scheduled.',
        params: idParams,
        response: { 200: responseOf(subscriptionSchema, 'The subscription'), ...errorResponses(401, 403, 404, 409) },
      },
      handler: async (request) => cancelPendingUpdate(db, clock, request.params.id),
    }),
    defineRoute({
      method: 'PUT',
      url: '/api/subscriptions/:id/cancel',
      schema: {
        ...common,
        operationId: 'cancelSubscription',
        summary: 'Cancel a subscription',
        description:
          'Body optional. Immediate by default (emits `subscription.cancelled`); `at_period_end: true` (from trialing/active only) flags it to end at `current_period_end`. From `cancelled` or `incomplete_expired`: 409 `validation_error`.',
        params: idParams,
        body: cancelBody,
        response: stateChangeResponses,
      },
      handler: async (request) => billing.cancelSubscription(db, deps, request.params.id, request.body ?? {}),
    }),
    defineRoute({
      method: 'PUT',
      url: '/api/subscriptions/:id/pause',
      schema: {
        ...common,
        operationId: 'pauseSubscription',
        summary: 'Pause a subscription',
        description:
          '`active` → `paused`: no renewals and no dunning while paused. 409 `validation_error` from other states.',
        params: idParams,
        response: stateChangeResponses,
      },
      handler: async (request) => billing.pauseSubscription(db, deps, request.params.id),
    }),
    defineRoute({
      method: 'PUT',
      url: '/api/subscriptions/:id/resume',
      schema: {
        ...common,
        operationId: 'resumeSubscription',
        summary: 'Resume a subscription',
        description:
          '`paused` → `active` with its payment due at once (unpaid past RENEWAL_GRACE → `past_due`); or clears a pending period-end cancel. 409 `validation_error` otherwise.',
        params: idParams,
        response: stateChangeResponses,
      },
      handler: async (request) => billing.resumeSubscription(db, clock, request.params.id),
    }),
  ];
}
