// Discounts (SPEC §14): a coupon applied to a subscription, or to a customer (every
// subscription of theirs) — the only writer of `discounts`. One per subscription and one of
// the customer's own (unique indexes); a new customer discount replaces the old one.
import type { Kysely, Transaction } from 'kysely';
import { inList } from '../../db/bulk.ts';
import type { Database } from '../../db/database.ts';
import type { CouponRow, DiscountRow } from '../../db/tables/coupons.table.ts';
import { pickFields } from '../../http/schemas.ts';
import { newId } from '../../shared/ids.ts';
import { type Discount, discountSchema } from './coupons.schemas.ts';
import { toCoupon } from './coupons.service.ts';

/** A discounts row and its coupon as the API shows them at `now`. */
export function toDiscount(row: DiscountRow, coupon: CouponRow, now: Date): Discount {
  return pickFields(discountSchema, {
    ...row,
    coupon: toCoupon(coupon, now),
    promotion_code: row.promotion_code_id,
    start: row.starts_at,
    end: row.ends_at,
  });
}

/** What a new discount is: whose, from which coupon (and code), from when until when (ISO 8601). */
export interface NewDiscount {
  couponId: string;
  promotionCodeId: string | null;
  customerId: string;
  subscriptionId: string | null;
  testClockId: string | null;
  start: string;
  /** Exclusive; null: no end yet (`once` until its first invoice, `forever`). */
  end: string | null;
}

/**
 * Writes a discount in `trx`. A customer's discount (`subscriptionId` null) replaces the one
 * they had: that row is deleted first (its invoices keep their lines). Returns the row.
 */
export async function insertDiscount(trx: Transaction<Database>, input: NewDiscount): Promise<DiscountRow> {
  if (input.subscriptionId === null) await removeCustomerDiscount(trx, input.customerId);
  const row: DiscountRow = {
    id: newId('discount'),
    coupon_id: input.couponId,
    promotion_code_id: input.promotionCodeId,
    customer_id: input.customerId,
    subscription_id: input.subscriptionId,
    starts_at: input.start,
    ends_at: input.end,
    test_clock_id: input.testClockId,
    created_at: input.start,
  };
  await trx.insertInto('discounts').values(row).execute();
  return row;
}

/** Deletes customer `customerId`'s own discount (not their subscriptions'); returns the row deleted, if any. */
export async function removeCustomerDiscount(
  trx: Transaction<Database>,
  customerId: string,
): Promise<DiscountRow | undefined> {
  return trx
    .deleteFrom('discounts')
    .where('customer_id', '=', customerId)
    .where('subscription_id', 'is', null)
    .returningAll()
    .executeTakeFirst();
}

/** Deletes subscription `subscriptionId`'s discount; returns the row deleted, if any. */
export async function removeSubscriptionDiscount(
  trx: Transaction<Database>,
  subscriptionId: string,
): Promise<DiscountRow | undefined> {
  return trx.deleteFrom('discounts').where('subscription_id', '=', subscriptionId).returningAll().executeTakeFirst();
}

/** A discount with its coupon. */
export interface DiscountWithCoupon {
  discount: DiscountRow;
  coupon: CouponRow;
}

/** `discounts` with their coupons, read in one more statement. */
async function withCoupons(
  db: Kysely<Database> | Transaction<Database>,
  discounts: DiscountRow[],
): Promise<DiscountWithCoupon[]> {
  if (discounts.length === 0) return [];
  const ids = [...new Set(discounts.map((d) => d.coupon_id))];
  const coupons = await db.selectFrom('coupons').selectAll().where('id', 'in', ids).execute();
  const byId = new Map(coupons.map((coupon) => [coupon.id, coupon]));
  return discounts.map((discount) => ({ discount, coupon: byId.get(discount.coupon_id)! }));
}

/** Every column of `coupons`, read beside a discount as `cpn_<column>`. */
const COUPON_COLUMNS = [
  'id',
  'name',
  'percent_off_bps',
  'amount_off',
  'currency',
  'duration',
  'duration_in_months',
  'max_redemptions',
  'redeem_by',
  'applies_to_plans',
  'times_redeemed',
  'metadata',
  'created_at',
  'updated_at',
  'deleted_at',
] as const satisfies readonly (keyof CouponRow)[];

/**
 * The discounts an invoice of subscription `subscriptionId` (of customer `customerId`) may
 * take, in the order the pipeline applies them (SPEC §14): the subscription's, then the
 * customer's. Deleted coupons included: their discounts keep applying. Whether each still
 * applies to a period is the pipeline's rule (its `end`). One statement: every invoice issued
 * runs it, most finding nothing.
 */
export async function discountsForSubscription(
  db: Kysely<Database> | Transaction<Database>,
  subscriptionId: string,
  customerId: string,
): Promise<DiscountWithCoupon[]> {
  const rows = await db
    .selectFrom('discounts')
    .innerJoin('coupons', 'coupons.id', 'discounts.coupon_id')
    .selectAll('discounts')
    .select(COUPON_COLUMNS.map((column) => `coupons.${column} as cpn_${column}` as const))
    .where((eb) =>
      eb.or([
        eb('discounts.subscription_id', '=', subscriptionId),
        eb.and([eb('discounts.customer_id', '=', customerId), eb('discounts.subscription_id', 'is', null)]),
      ]),
    )
    .execute();
  const found = rows.map(splitDiscountRow);
  // The subscription's first.
  return found.sort(
    (a, b) => Number(a.discount.subscription_id === null) - Number(b.discount.subscription_id === null),
  );
}

/** A discount read beside its coupon's `cpn_<column>`s, as the two rows. */
function splitDiscountRow(row: object): DiscountWithCoupon {
  const record = row as Record<string, unknown>;
  const coupon = Object.fromEntries(COUPON_COLUMNS.map((column) => [column, record[`cpn_${column}`]]));
  const discount = Object.fromEntries(Object.entries(record).filter(([key]) => !key.startsWith('cpn_')));
  return { discount: discount as unknown as DiscountRow, coupon: coupon as unknown as CouponRow };
}

/**
 * discountsForSubscription for many subscriptions (`id` and `customer_id` each) in one read:
 * subscription id → its discounts in the pipeline's order (its own, then its customer's).
 */
export async function discountsForSubscriptions(
  db: Kysely<Database> | Transaction<Database>,
  subscriptions: readonly { id: string; customer_id: string }[],
): Promise<Map<string, DiscountWithCoupon[]>> {
  const bySubscription = new Map<string, DiscountWithCoupon[]>(subscriptions.map((s) => [s.id, []]));
  if (subscriptions.length === 0) return bySubscription;
  const rows = await db
    .selectFrom('discounts')
    .innerJoin('coupons', 'coupons.id', 'discounts.coupon_id')
    .selectAll('discounts')
    .select(COUPON_COLUMNS.map((column) => `coupons.${column} as cpn_${column}` as const))
    .where((eb) =>
      eb.or([
        inList(
          db,
          'discounts.subscription_id',
          subscriptions.map((s) => s.id),
        ),
        eb.and([
          inList(db, 'discounts.customer_id', [...new Set(subscriptions.map((s) => s.customer_id))]),
          eb('discounts.subscription_id', 'is', null),
        ]),
      ]),
    )
    .execute();
  const ofCustomer = new Map<string, DiscountWithCoupon[]>();
  for (const row of rows) {
    const found = splitDiscountRow(row);
    const { subscription_id, customer_id } = found.discount;
    if (subscription_id !== null) bySubscription.get(subscription_id)?.push(found);
    else {
      const list = ofCustomer.get(customer_id);
      if (list) list.push(found);
      else ofCustomer.set(customer_id, [found]);
    }
  }
  for (const { id, customer_id } of subscriptions) bySubscription.get(id)!.push(...(ofCustomer.get(customer_id) ?? []));
  return bySubscription;
}

/** The discount of subscription `subscriptionId`, or of customer `customerId` when `subscriptionId` is null. */
export async function findDiscount(
  db: Kysely<Database> | Transaction<Database>,
  customerId: string,
  subscriptionId: string | null,
): Promise<DiscountWithCoupon | undefined> {
  let query = db.selectFrom('discounts').selectAll();
  query =
    subscriptionId === null
      ? query.where('customer_id', '=', customerId).where('subscription_id', 'is', null)
      : query.where('subscription_id', '=', subscriptionId);
  const row = await query.executeTakeFirst();
  return row ? (await withCoupons(db, [row]))[0] : undefined;
}

/**
 * Ends `once` discounts that have just been used: `ends_at` = `end` (the period end of the
 * invoice that took them), for those of `ids` not ended yet.
 */
export async function endDiscounts(trx: Transaction<Database>, ids: readonly string[], end: string): Promise<void> {
  if (ids.length === 0) return;
  await trx
    .updateTable('discounts')
    .set({ ends_at: end })
    .where('id', 'in', ids)
    .where('ends_at', 'is', null)
    .execute();
}

/** A test clock's delete (billing/test-clocks.ts): the discounts of `customerIds`, before their customers. */
export async function deleteDiscountsOfCustomers(
  trx: Transaction<Database>,
  customerIds: readonly string[],
): Promise<void> {
  if (customerIds.length === 0) return;
  await trx.deleteFrom('discounts').where('customer_id', 'in', customerIds).execute();
}
