// Row shapes of `coupons`, `promotion_codes` and `discounts` (SPEC §14), owned by
// src/modules/coupons: how much comes off, the codes customers type, and a coupon applied
// to a subscription or a customer.
import type { Selectable } from 'kysely';

export const COUPON_DURATIONS = ['once', 'repeating', 'forever'] as const;
export type CouponDuration = (typeof COUPON_DURATIONS)[number];

export interface CouponsTable {
  /** `coupon_…`. */
  id: string;
  name: string;
  /** Hundredths of a percent (2000 = 20.00 %), 1…10000; null for an amount_off coupon. */
  percent_off_bps: number | null;
  /** Minor units of `currency`; null for a percent_off coupon. PostgreSQL's bigint may read as text. */
  amount_off: number | string | null;
  /** ISO 4217 of `amount_off`; null for a percent_off coupon. */
  currency: string | null;
  duration: CouponDuration;
  /** Months a `repeating` coupon lasts from its redemption; null otherwise. */
  duration_in_months: number | null;
  max_redemptions: number | null;
  redeem_by: string | null;
  /** JSON array of plan ids; null: every plan. */
  applies_to_plans: string | null;
  times_redeemed: number;
  metadata: string;
  created_at: string;
  updated_at: string;
  /** Set by DELETE: no new redemptions; existing discounts keep applying. */
  deleted_at: string | null;
}

export interface PromotionCodesTable {
  /** `promo_…`. */
  id: string;
  /** As created (its case kept for display). */
  code: string;
  /** `code` in lower case: what lookups and the unique index among active codes compare. */
  code_normalized: string;
  coupon_id: string;
  max_redemptions: number | null;
  expires_at: string | null;
  /** 1/0 on SQLite, boolean on PostgreSQL. */
  first_time_transaction: boolean | number;
  minimum_amount: number | string | null;
  minimum_amount_currency: string | null;
  /** 1/0 on SQLite, boolean on PostgreSQL. */
  active: boolean | number;
  times_redeemed: number;
  metadata: string;
  created_at: string;
  updated_at: string;
}

export interface DiscountsTable {
  /** `di_…`. */
  id: string;
  coupon_id: string;
  promotion_code_id: string | null;
  customer_id: string;
  /** Null: the customer's discount (every subscription of theirs). */
  subscription_id: string | null;
  starts_at: string;
  /** Exclusive: invoices whose period starts before it are discounted; null: no end (yet). */
  ends_at: string | null;
  /** The customer's test clock (SPEC §11); null: real time. */
  test_clock_id: string | null;
  created_at: string;
}

export type CouponRow = Selectable<CouponsTable>;
export type PromotionCodeRow = Selectable<PromotionCodesTable>;
export type DiscountRow = Selectable<DiscountsTable>;
