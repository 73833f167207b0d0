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
import {
  type DiscountWithCoupon,
  discountsForSubscription,
  endDiscounts,
  insertDiscount,
  removeCustomerDiscount,
  toDiscount,
} from '../modules/coupons/coupons.discounts.ts';
import {
  findPromotionCodeByReference,
  promotionCodeRefusal,
  redeemPromotionCode,
} from '../modules/coupons/coupons.promotion-codes.ts';
import type { Discount } from '../modules/coupons/coupons.schemas.ts';
import { redeemCoupon } from '../modules/coupons/coupons.service.ts';
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
async function hasPaidInvoice(trx: Transaction<Database>, customerId: string): Promise<boolean> {
  const paid = await trx
    .selectFrom('invoices')
    .select('id')
    .where('customer_id', '=', customerId)
    .where('status', '=', 'paid')
    .where('total', '>', 0)
    .limit(1)
    .executeTakeFirst();
  return paid !== undefined;
}

/**
 * Redeems `request`'s coupon or promotion code for `target` at `clock`'s time and writes the
 * discount (SPEC §14), emitting `customer.discount.created`, in `trx` (the caller holds the
 * customer's lock). A customer's discount replaces the one they had. `end`: `repeating` →
 * now + duration_in_months; `once` and `forever` → null (`once` ends with its first invoice).
 * Throws 400 `validation_error` naming the field: both fields given; an unknown coupon or
 * code; a coupon deleted, past redeem_by or at max_redemptions; a code inactive, expired or
 * at max_redemptions; first_time_transaction for a customer with a paid invoice;
 * minimum_amount above the first invoice's subtotal, in another currency, or asked of a
 * customer's discount (it has no first invoice); a coupon whose applies_to_plans leaves out
 * the subscription's plan. Nothing is counted then (the caller's transaction rolls back).
 */
export async function redeemDiscount(
  trx: Transaction<Database>,
  clock: Clock,
  request: DiscountRequest,
  target: DiscountTarget,
): Promise<Discount> {
  if (request.coupon !== undefined && request.promotion_code !== undefined) {
    throw new ValidationError('give a coupon or a promotion_code, not both', 'promotion_code');
  }
  const now = clock.now();
  let couponId = request.coupon;
  let promotionCodeId: string | null = null;
  if (request.promotion_code !== undefined) {
    const code = await findPromotionCodeByReference(trx, request.promotion_code);
    if (!code) throw new ValidationError(`promotion code ${request.promotion_code} does not exist`, 'promotion_code');
    const refusal = promotionCodeRefusal(code, now);
    if (refusal !== null) {
      throw new ValidationError(`promotion code ${code.code} cannot be redeemed: ${refusal}`, 'promotion_code');
    }
    if (code.first_time_transaction && (await hasPaidInvoice(trx, target.customer.id))) {
      throw new ValidationError(
        `promotion code ${code.code} is for first-time customers: customer ${target.customer.id} has paid an invoice`,
        'promotion_code',
      );
    }
    if (code.minimum_amount !== null)
      checkMinimum(code.code, Number(code.minimum_amount), code.minimum_amount_currency!, target);
    await redeemPromotionCode(trx, code, now);
    couponId = code.coupon_id;
    promotionCodeId = code.id;
  }
  const coupon = await redeemCoupon(trx, couponId!, now);
  const plans = coupon.applies_to_plans === null ? null : (JSON.parse(coupon.applies_to_plans) as string[]);
  if (target.subscription !== null && plans !== null && !plans.includes(target.subscription.plan.id)) {
    throw new ValidationError(
      `coupon ${coupon.id} does not apply to plan ${target.subscription.plan.id} (applies_to_plans)`,
      request.coupon !== undefined ? 'coupon' : 'promotion_code',
    );
  }
  const end =
    coupon.duration === 'repeating' ? addInterval(now, 'month', coupon.duration_in_months!).toISOString() : null;
  // A customer has one discount of their own: the new one replaces it.
  if (target.subscription === null) await removeDiscountOfCustomer(trx, clock, target.customer.id);
  const row = await insertDiscount(trx, {
    couponId: coupon.id,
    promotionCodeId,
    customerId: target.customer.id,
    subscriptionId: target.subscription?.id ?? null,
    testClockId: target.customer.test_clock_id,
    start: now.toISOString(),
    end,
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
 * Removes customer `customer`'s own discount (PATCH `coupon: null`), emitting
 * `customer.discount.deleted` when there was one. Its invoices keep their lines.
 */
export async function removeDiscountOfCustomer(
  trx: Transaction<Database>,
  clock: Clock,
  customerId: string,
): Promise<void> {
  const removed = await removeCustomerDiscount(trx, customerId);
  if (!removed) return;
  const coupon = await trx
    .selectFrom('coupons')
    .selectAll()
    .where('id', '=', removed.coupon_id)
    .executeTakeFirstOrThrow();
  await emitEvent(trx, clock, 'customer.discount.deleted', toDiscount(removed, coupon, clock.now()));
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
 */
export async function invoiceDiscounts(
  db: Kysely<Database> | Transaction<Database>,
  subscriptionId: string,
  customerId: string,
): Promise<InvoiceDiscounts> {
  const found = await discountsForSubscription(db, subscriptionId, customerId);
  const usable = found.filter(({ discount, coupon }) => coupon.duration !== 'once' || discount.ends_at === null);
  return {
    compose: usable.map(({ discount, coupon }) => ({
      id: discount.id,
      end: discount.ends_at,
      coupon: {
        id: coupon.id,
        name: coupon.name,
        percent_off_bps: coupon.percent_off_bps,
        amount_off: coupon.amount_off === null ? null : Number(coupon.amount_off),
        currency: coupon.currency,
        applies_to_plans: coupon.applies_to_plans === null ? null : (JSON.parse(coupon.applies_to_plans) as string[]),
      },
    })),
    once: usable.filter(({ coupon }) => coupon.duration === 'once'),
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
