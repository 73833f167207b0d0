// Redeeming coupons and promotion codes (SPEC §14), and the discounts an invoice takes. A
// request names a `coupon` or a `promotion_code`; redeeming checks the code's restrictions,
// counts the redemption on the code and on its coupon (conditional updates: limits hold under
// concurrency) and writes the discount with `customer.discount.created`, all in the caller's
// transaction. The issuer reads the discounts of a subscription and its customer for the
// pipeline (compose/discounts.ts) and ends a `once` discount once an invoice took it.
import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../db/database.ts';
import type { CustomerRow } from '../db/tables/customers.table.ts';
import type { PlanRow } from '../db/tables/plans.table.ts';
import { ValidationError } from '../http/errors.ts';
import type { Clock } from '../shared/clock.ts';
import type { CouponRow, PromotionCodeRow } from '../db/tables/coupons.table.ts';
import {
  type DiscountWithCoupon,
  discountsForSubscription,
  discountsForSubscriptions,
  endDiscounts,
  insertDiscount,
  removeCustomerDiscount,
  removeSubscriptionDiscount,
  toDiscount,
} from '../modules/coupons/coupons.discounts.ts';
import {
  findPromotionCodeByReference,
  promotionCodeRefusal,
  redeemPromotionCode,
} from '../modules/coupons/coupons.promotion-codes.ts';
import type { Discount } from '../modules/coupons/coupons.schemas.ts';
import { couponRefusal, findCoupon, redeemCoupon } from '../modules/coupons/coupons.service.ts';
import { emitEvent } from '../modules/events/events.service.ts';
import { addInterval } from '../modules/subscriptions/subscriptions.billing-period.ts';
import type { ComposeDiscount, ComposedInvoice } from './compose/types.ts';

/** A request's discount fields: at most one of them. */
export interface DiscountRequest {
  coupon?: string;
  promotion_code?: string;
}

/** Whom a discount is for: a subscription on `plan` (its first invoice's subtotal), or the customer (null). */
export interface DiscountTarget {
  customer: Pick<CustomerRow, 'id' | 'test_clock_id'>;
  subscription: { id: string; plan: Pick<PlanRow, 'id' | 'amount' | 'currency'>; quantity: number } | null;
}

/** True when the request names a coupon or a promotion code. */
export function asksForDiscount(request: DiscountRequest): boolean {
  return request.coupon !== undefined || request.promotion_code !== undefined;
}

/** Has customer `customerId` paid an invoice that charged something (SPEC §14 first_time_transaction)? */
async function hasPaidInvoice(db: Kysely<Database> | Transaction<Database>, customerId: string): Promise<boolean> {
  const paid = await db
    .selectFrom('invoices')
    .select('id')
    .where('customer_id', '=', customerId)
    .where('status', '=', 'paid')
    .where('total', '>', 0)
    .limit(1)
    .executeTakeFirst();
  return paid !== undefined;
}

/** What a discount request names once checked: the coupon, and the promotion code it came through (or null). */
export interface DiscountOffer {
  coupon: CouponRow;
  code: PromotionCodeRow | null;
}

/**
 * Checks `request`'s coupon or promotion code for `target` at `now` without counting anything
 * (SPEC §14): what redeemDiscount checks before it counts, and what a preview shows. Throws
 * 400 `validation_error` naming the field: both fields given; an unknown coupon or code; a
 * coupon deleted, past redeem_by or at max_redemptions; a code inactive, expired or at
 * max_redemptions; first_time_transaction for a customer with a paid invoice; minimum_amount
 * above the first invoice's subtotal, in another currency, or asked of a customer's discount;
 * a coupon whose applies_to_plans leaves out the subscription's plan. Reads only.
 */
export async function checkDiscountRequest(
  db: Kysely<Database> | Transaction<Database>,
  request: DiscountRequest,
  target: DiscountTarget,
  now: Date,
): Promise<DiscountOffer> {
  if (request.coupon !== undefined && request.promotion_code !== undefined) {
    throw new ValidationError('give a coupon or a promotion_code, not both', 'promotion_code');
  }
  let couponId = request.coupon;
  let code: PromotionCodeRow | null = null;
  if (request.promotion_code !== undefined) {
    code = (await findPromotionCodeByReference(db, request.promotion_code)) ?? null;
    if (!code) throw new ValidationError(`promotion code ${request.promotion_code} does not exist`, 'promotion_code');
    const refusal = promotionCodeRefusal(code, now);
    if (refusal !== null) {
      throw new ValidationError(`promotion code ${code.code} cannot be redeemed: ${refusal}`, 'promotion_code');
    }
    if (code.first_time_transaction && (await hasPaidInvoice(db, target.customer.id))) {
      throw new ValidationError(
        `promotion code ${code.code} is for first-time customers: customer ${target.customer.id} has paid an invoice`,
        'promotion_code',
      );
    }
    if (code.minimum_amount !== null)
      checkMinimum(code.code, Number(code.minimum_amount), code.minimum_amount_currency!, target);
    couponId = code.coupon_id;
  }
  const field = request.coupon !== undefined ? 'coupon' : 'promotion_code';
  const coupon = await findCoupon(db, couponId!);
  if (!coupon) throw new ValidationError(`coupon ${couponId} does not exist`, field);
  const refusal = couponRefusal(coupon, now);
  if (refusal !== null) throw new ValidationError(`coupon ${coupon.id} cannot be redeemed: ${refusal}`, field);
  const plans = coupon.applies_to_plans === null ? null : (JSON.parse(coupon.applies_to_plans) as string[]);
  if (target.subscription !== null && plans !== null && !plans.includes(target.subscription.plan.id)) {
    throw new ValidationError(
      `coupon ${coupon.id} does not apply to plan ${target.subscription.plan.id} (applies_to_plans)`,
      field,
    );
  }
  return { coupon, code };
}

/** A discount's end (exclusive) when redeemed at `now`: `repeating` → now + duration_in_months; else null. */
function discountEnd(coupon: CouponRow, now: Date): string | null {
  return coupon.duration === 'repeating' ? addInterval(now, 'month', coupon.duration_in_months!).toISOString() : null;
}

/**
 * The discount `offer` would be for the pipeline if redeemed at `now` (a preview: nothing
 * stored, nothing counted), as invoiceDiscounts gives a stored one.
 */
export function offeredDiscount(offer: DiscountOffer, now: Date): ComposeDiscount {
  return { id: 'preview', end: discountEnd(offer.coupon, now), coupon: composeCoupon(offer.coupon) };
}

/**
 * Redeems `request`'s coupon or promotion code for `target` at `clock`'s time and writes the
 * discount (SPEC §14), emitting `customer.discount.created`, in `trx` (the caller holds the
 * customer's lock, and the subscription's for a subscription's discount). The new discount
 * replaces the one its owner had (the customer's own, or the subscription's: removed with
 * `customer.discount.deleted`; never two). `end`: `repeating` → now + duration_in_months;
 * `once` and `forever` → null (`once` ends with its first invoice). Checks everything
 * checkDiscountRequest checks (its 400s), then counts the redemption on the code and on its
 * coupon with conditional updates, so limits hold under concurrency (400 when the last one
 * went to another request meanwhile). Nothing is counted on a refusal (the caller's
 * transaction rolls back).
 */
export async function redeemDiscount(
  trx: Transaction<Database>,
  clock: Clock,
  request: DiscountRequest,
  target: DiscountTarget,
): Promise<Discount> {
  const now = clock.now();
  const offer = await checkDiscountRequest(trx, request, target, now);
  if (offer.code !== null) await redeemPromotionCode(trx, offer.code, now);
  let coupon: CouponRow;
  try {
    coupon = await redeemCoupon(trx, offer.coupon.id, now);
  } catch (error) {
    // The code's own field when the request named a code.
    if (error instanceof ValidationError && offer.code !== null) {
      throw new ValidationError(error.message, 'promotion_code');
    }
    throw error;
  }
  await removeDiscountOf(trx, clock, target.customer.id, target.subscription?.id ?? null);
  const row = await insertDiscount(trx, {
    couponId: coupon.id,
    promotionCodeId: offer.code?.id ?? null,
    customerId: target.customer.id,
    subscriptionId: target.subscription?.id ?? null,
    testClockId: target.customer.test_clock_id,
    start: now.toISOString(),
    end: discountEnd(coupon, now),
  });
  // Read after the redemption: its count includes this one.
  const discount = toDiscount(row, coupon, now);
  await emitEvent(trx, clock, 'customer.discount.created', discount);
  return discount;
}

/** Throws 400 unless the target's first invoice subtotal reaches `minimum` in `currency`. */
function checkMinimum(code: string, minimum: number, currency: string, target: DiscountTarget): void {
  const subscription = target.subscription;
  if (subscription === null) {
    throw new ValidationError(
      `promotion code ${code} has a minimum_amount: redeem it with a subscription, whose first invoice it is checked against`,
      'promotion_code',
    );
  }
  const subtotal = Number(subscription.plan.amount) * subscription.quantity;
  if (subscription.plan.currency !== currency || subtotal < minimum) {
    throw new ValidationError(
      `promotion code ${code} needs a first invoice of at least ${minimum} ${currency} (minor units); this one is ${subtotal} ${subscription.plan.currency}`,
      'promotion_code',
    );
  }
}

/**
 * Removes customer `customerId`'s own discount (PATCH `coupon: null`), emitting
 * `customer.discount.deleted` when there was one. Its invoices keep their lines.
 */
export async function removeDiscountOfCustomer(
  trx: Transaction<Database>,
  clock: Clock,
  customerId: string,
): Promise<void> {
  await removeDiscountOf(trx, clock, customerId, null);
}

/**
 * Removes the discount of subscription `subscriptionId` (of customer `customerId`), or the
 * customer's own when it is null, emitting `customer.discount.deleted` when there was one
 * (SPEC §14: PATCH `coupon: null`, or a new discount replacing it). Invoices keep their lines.
 * Returns the discount removed, as it was, or null.
 */
export async function removeDiscountOf(
  trx: Transaction<Database>,
  clock: Clock,
  customerId: string,
  subscriptionId: string | null,
): Promise<Discount | null> {
  const removed =
    subscriptionId === null
      ? await removeCustomerDiscount(trx, customerId)
      : await removeSubscriptionDiscount(trx, subscriptionId);
  if (!removed) return null;
  const coupon = await trx
    .selectFrom('coupons')
    .selectAll()
    .where('id', '=', removed.coupon_id)
    .executeTakeFirstOrThrow();
  const discount = toDiscount(removed, coupon, clock.now());
  await emitEvent(trx, clock, 'customer.discount.deleted', discount);
  return discount;
}

/** The discounts an invoice of a subscription may take, for the pipeline and for issuing. */
export interface InvoiceDiscounts {
  /** The pipeline's input, in order: the subscription's, then the customer's. */
  compose: ComposeDiscount[];
  /** The `once` discounts among them, not used yet: an invoice that takes one ends it. */
  once: DiscountWithCoupon[];
}

/**
 * The discounts of subscription `subscriptionId` and of its customer `customerId` (SPEC §14),
 * as the pipeline takes them: a `once` discount only until an invoice took it (its `ends_at`
 * then set), a `repeating` one until its end, `forever` always — deleted coupons included.
 * `subscriptionDiscount` (a preview's): the subscription's own discount instead of the stored
 * one, null for none; undefined (default) reads the stored one.
 */
export async function invoiceDiscounts(
  db: Kysely<Database> | Transaction<Database>,
  subscriptionId: string,
  customerId: string,
  subscriptionDiscount?: ComposeDiscount | null,
): Promise<InvoiceDiscounts> {
  return toInvoiceDiscounts(await discountsForSubscription(db, subscriptionId, customerId), subscriptionDiscount);
}

/**
 * invoiceDiscounts for many subscriptions (`id`, `customer_id`) in one read: subscription id →
 * its discounts, as invoiceDiscounts gives them (stored ones only).
 */
export async function invoiceDiscountsOf(
  db: Kysely<Database> | Transaction<Database>,
  subscriptions: readonly { id: string; customer_id: string }[],
): Promise<Map<string, InvoiceDiscounts>> {
  const found = await discountsForSubscriptions(db, subscriptions);
  return new Map([...found].map(([id, discounts]) => [id, toInvoiceDiscounts(discounts)]));
}

/** What invoiceDiscounts makes of the discounts `found` (see there). */
function toInvoiceDiscounts(
  found: readonly DiscountWithCoupon[],
  subscriptionDiscount?: ComposeDiscount | null,
): InvoiceDiscounts {
  const usable = found.filter(
    ({ discount, coupon }) =>
      (coupon.duration !== 'once' || discount.ends_at === null) &&
      (subscriptionDiscount === undefined || discount.subscription_id === null),
  );
  const stored = usable.map(({ discount, coupon }) => ({
    id: discount.id,
    end: discount.ends_at,
    coupon: composeCoupon(coupon),
  }));
  return {
    // The subscription's first, as discountsForSubscription orders them.
    compose: subscriptionDiscount ? [subscriptionDiscount, ...stored] : stored,
    once: usable.filter(({ coupon }) => coupon.duration === 'once'),
  };
}

/** A coupon as the pipeline reads it. */
function composeCoupon(coupon: CouponRow): ComposeDiscount['coupon'] {
  return {
    id: coupon.id,
    name: coupon.name,
    percent_off_bps: coupon.percent_off_bps,
    amount_off: coupon.amount_off === null ? null : Number(coupon.amount_off),
    currency: coupon.currency,
    applies_to_plans: coupon.applies_to_plans === null ? null : (JSON.parse(coupon.applies_to_plans) as string[]),
  };
}

/**
 * Ends the `once` discounts of `discounts` that `content` (an invoice just issued for a
 * period ending at `periodEnd`) took — a line with their coupon — at `periodEnd`: the next
 * period starts there, so no later invoice takes them again.
 */
export async function endUsedOnceDiscounts(
  trx: Transaction<Database>,
  discounts: InvoiceDiscounts,
  content: ComposedInvoice,
  periodEnd: string,
): Promise<void> {
  const used = new Set(content.lines.filter((line) => line.kind === 'discount').map((line) => line.coupon_id));
  const ids = discounts.once.filter(({ coupon }) => used.has(coupon.id)).map(({ discount }) => discount.id);
  await endDiscounts(trx, ids, periodEnd);
}
