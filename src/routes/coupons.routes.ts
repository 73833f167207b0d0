// /api/coupons and /api/promotion-codes (SPEC §14): create, list, get, update; a coupon's
// delete. Redeeming is part of creating a subscription or creating/changing a customer.
import type { Deps } from '../deps.ts';
import { type ListQueryInput, listQuerySchema, parseListParams } from '../http/lists.ts';
import { defineRoute, type Route } from '../http/route.ts';
import { API_KEY_SECURITY, errorResponses, idParams, responseOf } from '../http/schemas.ts';
import {
  COUPON_SORT_FIELDS,
  couponListSchema,
  couponSchema,
  createCouponBody,
  createPromotionCodeBody,
  PROMOTION_CODE_SORT_FIELDS,
  promotionCodeListSchema,
  promotionCodeSchema,
  updateCouponBody,
  updatePromotionCodeBody,
} from '../modules/coupons/coupons.schemas.ts';
import * as coupons from '../modules/coupons/coupons.service.ts';
import * as codes from '../modules/coupons/coupons.promotion-codes.ts';

const common = { tags: ['Coupons'], security: API_KEY_SECURITY };

interface PromotionCodeQuery extends ListQueryInput {
  code?: string;
  coupon?: string;
  active?: 'true' | 'false';
}

/** Routes of coupons and promotion codes. */
export function couponRoutes(deps: Deps): Route[] {
  const { db, clock } = deps;
  return [
    defineRoute({
      method: 'POST',
      url: '/api/coupons',
      schema: {
        ...common,
        operationId: 'createCoupon',
        summary: 'Create a coupon',
        description:
          'Exactly one of `percent_off` (0 < x ≤ 100, 2 decimals) or `amount_off` + `currency`; `duration_in_months` with `repeating` only. Emits `coupon.created`.',
        body: createCouponBody,
        response: { 201: responseOf(couponSchema, 'The new coupon'), ...errorResponses(400, 401, 403, 413, 415) },
      },
      handler: async (request, reply) => reply.code(201).send(await coupons.createCoupon(db, clock, request.body)),
    }),
    defineRoute<{ Querystring: ListQueryInput }>({
      method: 'GET',
      url: '/api/coupons',
      schema: {
        ...common,
        operationId: 'listCoupons',
        summary: 'List coupons',
        querystring: listQuerySchema(COUPON_SORT_FIELDS),
        response: { 200: responseOf(couponListSchema, 'A page of coupons'), ...errorResponses(400, 401, 403) },
      },
      handler: async (request) => coupons.listCoupons(db, clock, parseListParams(request.query)),
    }),
    defineRoute({
      method: 'GET',
      url: '/api/coupons/:id',
      schema: {
        ...common,
        operationId: 'getCoupon',
        summary: 'Get a coupon',
        params: idParams,
        response: { 200: responseOf(couponSchema, 'The coupon'), ...errorResponses(401, 403, 404) },
      },
      handler: async (request) => coupons.getCoupon(db, clock, request.params.id),
    }),
    defineRoute({
      method: 'PATCH',
      url: '/api/coupons/:id',
      schema: {
        ...common,
        operationId: 'updateCoupon',
        summary: 'Update a coupon',
        description: 'Only `name` and `metadata`; what a coupon takes off is fixed. Emits `coupon.updated`.',
        params: idParams,
        body: updateCouponBody,
        response: {
          200: responseOf(couponSchema, 'The coupon as updated'),
          ...errorResponses(400, 401, 403, 404, 413, 415),
        },
      },
      handler: async (request) => coupons.updateCoupon(db, clock, request.params.id, request.body),
    }),
    defineRoute({
      method: 'DELETE',
      url: '/api/coupons/:id',
      schema: {
        ...common,
        operationId: 'deleteCoupon',
        summary: 'Delete a coupon',
        description:
          'No new redemptions (nor through its promotion codes); the discounts made keep applying. Emits `coupon.deleted`.',
        params: idParams,
        response: { 204: { type: 'null', description: 'Deleted' }, ...errorResponses(401, 403, 404) },
      },
      handler: async (request, reply) => {
        await coupons.deleteCoupon(db, clock, request.params.id);
        return reply.code(204).send();
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/api/promotion-codes',
      schema: {
        ...common,
        operationId: 'createPromotionCode',
        summary: 'Create a promotion code',
        description:
          '`code`: 3–40 letters, digits, `-` or `_`, unique among active codes without case (409 otherwise). Emits `promotion_code.created`.',
        body: createPromotionCodeBody,
        response: {
          201: responseOf(promotionCodeSchema, 'The new promotion code'),
          ...errorResponses(400, 401, 403, 409, 413, 415),
        },
      },
      handler: async (request, reply) => reply.code(201).send(await codes.createPromotionCode(db, clock, request.body)),
    }),
    defineRoute<{ Querystring: PromotionCodeQuery }>({
      method: 'GET',
      url: '/api/promotion-codes',
      schema: {
        ...common,
        operationId: 'listPromotionCodes',
        summary: 'List promotion codes',
        querystring: listQuerySchema(PROMOTION_CODE_SORT_FIELDS, {
          code: { type: 'string', maxLength: 100, description: 'Exact, without case.' },
          coupon: { type: 'string', maxLength: 64, description: 'A coupon id.' },
          active: { type: 'string', enum: ['true', 'false'] },
        }),
        response: {
          200: responseOf(promotionCodeListSchema, 'A page of promotion codes'),
          ...errorResponses(400, 401, 403),
        },
      },
      handler: async (request) => {
        const { code, coupon, active } = request.query;
        return codes.listPromotionCodes(db, parseListParams(request.query), {
          code,
          coupon,
          active: active === undefined ? undefined : active === 'true',
        });
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/api/promotion-codes/:id',
      schema: {
        ...common,
        operationId: 'getPromotionCode',
        summary: 'Get a promotion code',
        params: idParams,
        response: { 200: responseOf(promotionCodeSchema, 'The promotion code'), ...errorResponses(401, 403, 404) },
      },
      handler: async (request) => codes.getPromotionCode(db, request.params.id),
    }),
    defineRoute({
      method: 'PATCH',
      url: '/api/promotion-codes/:id',
      schema: {
        ...common,
        operationId: 'updatePromotionCode',
        summary: 'Update a promotion code',
        description:
          '`active` and `metadata` only. Reactivating a code another active promotion code has is 409. Emits `promotion_code.updated`.',
        params: idParams,
        body: updatePromotionCodeBody,
        response: {
          200: responseOf(promotionCodeSchema, 'The promotion code as updated'),
          ...errorResponses(400, 401, 403, 404, 409, 413, 415),
        },
      },
      handler: async (request) => codes.updatePromotionCode(db, clock, request.params.id, request.body),
    }),
  ];
}
