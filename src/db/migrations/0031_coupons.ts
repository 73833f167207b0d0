// Coupons, promotion codes and discounts (SPEC §14). A coupon says how much comes off
// (percent_off in hundredths of a percent, exact, or amount_off in one currency) and for how
// long; a promotion code is a customer-facing code for a coupon, unique among active codes
// (compared in lower case); a discount is a coupon applied to a subscription or to a
// customer (all their subscriptions), from `starts_at` until `ends_at` (null: no end yet).
// Redemption counters are moved by one conditional UPDATE each, so limits hold under
// concurrency.
import { type Kysely, sql } from 'kysely';
import { columnTypes } from '../column-types.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function up(db: Kysely<any>): Promise<void> {
  const t = columnTypes(db);
  await db.schema
    .createTable('coupons')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    // 2000 = 20.00 %: exact integer math on a 2-decimal percentage.
    .addColumn('percent_off_bps', 'integer', (c) => c.check(sql`percent_off_bps between 1 and 10000`))
    .addColumn('amount_off', t.bigint, (c) => c.check(sql`amount_off > 0`))
    .addColumn('currency', 'text')
    .addColumn('duration', 'text', (c) => c.notNull().check(sql`duration in ('once', 'repeating', 'forever')`))
    .addColumn('duration_in_months', 'integer')
    .addColumn('max_redemptions', 'integer')
    .addColumn('redeem_by', t.timestamp)
    // JSON array of plan ids; null: every plan.
    .addColumn('applies_to_plans', 'text')
    .addColumn('times_redeemed', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('metadata', 'text', (c) => c.notNull())
    .addColumn('created_at', t.timestamp, (c) => c.notNull())
    .addColumn('updated_at', t.timestamp, (c) => c.notNull())
    .addColumn('deleted_at', t.timestamp)
    .addCheckConstraint('coupons_one_kind', sql`(percent_off_bps is null) <> (amount_off is null)`)
    .execute();

  await db.schema
    .createTable('promotion_codes')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('code', 'text', (c) => c.notNull())
    .addColumn('code_normalized', 'text', (c) => c.notNull())
    .addColumn('coupon_id', 'text', (c) => c.notNull().references('coupons.id'))
    .addColumn('max_redemptions', 'integer')
    .addColumn('expires_at', t.timestamp)
    .addColumn('first_time_transaction', t.boolean, (c) => c.notNull())
    .addColumn('minimum_amount', t.bigint)
    .addColumn('minimum_amount_currency', 'text')
    .addColumn('active', t.boolean, (c) => c.notNull())
    .addColumn('times_redeemed', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('metadata', 'text', (c) => c.notNull())
    .addColumn('created_at', t.timestamp, (c) => c.notNull())
    .addColumn('updated_at', t.timestamp, (c) => c.notNull())
    .execute();
  // A code is unique among active codes; an inactive one may share it.
  await db.schema
    .createIndex('promotion_codes_active_code')
    .unique()
    .on('promotion_codes')
    .column('code_normalized')
    .where(sql<boolean>`active`)
    .execute();
  await db.schema.createIndex('promotion_codes_by_coupon').on('promotion_codes').columns(['coupon_id', 'id']).execute();

  await db.schema
    .createTable('discounts')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('coupon_id', 'text', (c) => c.notNull().references('coupons.id'))
    .addColumn('promotion_code_id', 'text', (c) => c.references('promotion_codes.id'))
    .addColumn('customer_id', 'text', (c) => c.notNull().references('customers.id'))
    // Null: the customer's discount, applied to every subscription of theirs.
    .addColumn('subscription_id', 'text', (c) => c.references('subscriptions.id'))
    .addColumn('starts_at', t.timestamp, (c) => c.notNull())
    .addColumn('ends_at', t.timestamp)
    .addColumn('test_clock_id', 'text')
    .addColumn('created_at', t.timestamp, (c) => c.notNull())
    .execute();
  // One discount per subscription, plus one of the customer's own.
  await db.schema
    .createIndex('discounts_one_per_subscription')
    .unique()
    .on('discounts')
    .column('subscription_id')
    .where(sql.ref('subscription_id'), 'is not', null)
    .execute();
  await db.schema
    .createIndex('discounts_one_per_customer')
    .unique()
    .on('discounts')
    .column('customer_id')
    .where(sql.ref('subscription_id'), 'is', null)
    .execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('discounts').execute();
  await db.schema.dropTable('promotion_codes').execute();
  await db.schema.dropTable('coupons').execute();
}
