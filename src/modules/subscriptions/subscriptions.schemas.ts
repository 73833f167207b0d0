// The subscription resource and its request bodies, defined once: these TypeBox schemas
// validate, serialize and document the routes, and the API types are their static types.
import Type, { type Static } from 'typebox';
import {
  metadataOut,
  metadataSchema,
  Nullable,
  nullableTimestamp,
  pageOf,
  ref,
  StringEnum,
  timestamp,
} from '../../http/schemas.ts';
import { SUBSCRIPTION_STATUSES } from './subscriptions.status.ts';
import { discountRequestFields, discountSchema } from '../coupons/coupons.schemas.ts';
import { taxRateIdsInput, taxRateIdsOut } from '../tax-rates/tax-rates.schemas.ts';
import { CANCELLATION_REASONS, type CancellationReason } from '../../db/tables/subscriptions.table.ts';

/** A change scheduled for the end of the period (SPEC §13), applied by the renewal. */
export const pendingUpdateSchema = Type.Object(
  {
    plan_id: Type.String(),
    quantity: Type.Integer({ minimum: 1, maximum: 1_000_000 }),
    effective_at: Type.String({ format: 'date-time', description: 'The period end at which it applies' }),
  },
  { description: 'A plan or quantity change scheduled for `effective_at` (the period end); null when none.' },
);

/** A subscription as the API returns it (SPEC §4 fields). */
export const subscriptionSchema = Type.Object(
  {
    id: Type.String({ examples: ['sub_01JD3Q7Z8X9Y0A1B2C3D4E5F6G'] }),
    customer_id: Type.String(),
    plan_id: Type.String(),
    status: StringEnum(SUBSCRIPTION_STATUSES),
    entitled: Type.Boolean({ description: 'May the customer use the product now? (trialing, active, past_due)' }),
    current_period_start: nullableTimestamp,
    current_period_end: nullableTimestamp,
    trial_end: nullableTimestamp,
    billing_cycle_anchor: Type.String({
      format: 'date-time',
      description:
        'Where the billing periods are counted from: creation, or the trial end (resume restarts them). Each period ends at the anchor plus a whole number of intervals, whenever it is paid: paying late never moves it.',
    }),
    quantity: Type.Integer({
      minimum: 1,
      maximum: 1_000_000,
      description: 'Units of the plan billed (seats): each period bills price × quantity',
    }),
    pending_update: Nullable(pendingUpdateSchema),
    cancel_at_period_end: Type.Boolean(),
    cancelled_at: nullableTimestamp,
    ended_at: nullableTimestamp,
    cancellation_reason: Type.Unsafe<CancellationReason | null>({
      type: ['string', 'null'],
      enum: [...CANCELLATION_REASONS, null],
    }),
    cancellation_comment: Nullable(Type.String()),
    tax_rate_ids: taxRateIdsOut,
    metadata: metadataOut,
    created_at: timestamp,
    updated_at: timestamp,
  },
  {
    $id: 'Subscription',
    description: 'A customer on a plan; `status` moves only by the transitions of SPEC §4.',
    examples: [
      {
        id: 'sub_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
        customer_id: 'cus_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
        plan_id: 'plan_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
        status: 'trialing',
        entitled: true,
        current_period_start: '2026-01-15T10:00:00.000Z',
        current_period_end: '2026-01-29T10:00:00.000Z',
        trial_end: '2026-01-29T10:00:00.000Z',
        billing_cycle_anchor: '2026-01-29T10:00:00.000Z',
        quantity: 1,
        pending_update: null,
        cancel_at_period_end: false,
        cancelled_at: null,
        ended_at: null,
        cancellation_reason: null,
        cancellation_comment: null,
        tax_rate_ids: [],
        metadata: {},
        created_at: '2026-01-15T10:00:00.000Z',
        updated_at: '2026-01-15T10:00:00.000Z',
      },
    ],
  },
);

export const subscriptionListSchema = pageOf('SubscriptionList', subscriptionSchema);

export type Subscription = Static<typeof subscriptionSchema>;

/**
 * One subscription with its own discount (SPEC §14): GET /api/subscriptions/{id} only. Lists,
 * changes and `subscription.*` events show the plain Subscription.
 */
export const subscriptionDetailSchema = Type.Object(
  {
    ...subscriptionSchema.properties,
    discount: Type.Optional(
      ref(discountSchema, {
        description:
          "The subscription's own discount (SPEC §14; the customer's applies too: see the customer); absent when there is none.",
      }),
    ),
  },
  {
    $id: 'SubscriptionDetail',
    description: 'A subscription and its discount (GET /api/subscriptions/{id}).',
    examples: (subscriptionSchema as unknown as { examples: unknown[] }).examples,
  },
);

/** A subscription with its discount, as GET /api/subscriptions/{id} returns it. */
export type SubscriptionDetail = Static<typeof subscriptionDetailSchema>;

export const createSubscriptionBody = Type.Object(
  {
    customer_id: Type.String({ minLength: 1, maxLength: 64 }),
    plan_id: Type.String({ minLength: 1, maxLength: 64 }),
    trial_period_days: Type.Optional(Type.Integer({ minimum: 0, maximum: 730 })),
    tax_rate_ids: Type.Optional(taxRateIdsInput),
    quantity: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 1_000_000, description: 'Units of the plan (seats); default 1' }),
    ),
    metadata: Type.Optional(metadataSchema),
    ...discountRequestFields,
  },
  {
    additionalProperties: false,
    examples: [{ customer_id: 'cus_01JD3Q7Z8X9Y0A1B2C3D4E5F6G', plan_id: 'plan_01JD3Q7Z8X9Y0A1B2C3D4E5F6G' }],
  },
);

export type CreateSubscriptionInput = Static<typeof createSubscriptionBody>;

const cancelFields = Type.Object(
  {
    at_period_end: Type.Optional(Type.Boolean({ default: false })),
    comment: Type.Optional(Type.String({ maxLength: 500 })),
  },
  { additionalProperties: false },
);

/** The body of PUT …/cancel: optional, so null (or none) means all defaults. */
export const cancelBody = Type.Unsafe<CancelInput | null>({
  ...Nullable(cancelFields),
  description: 'Optional: without a body the subscription is cancelled now.',
  examples: [{ at_period_end: true, comment: 'Moving to the yearly plan' }],
});

export type CancelInput = Static<typeof cancelFields>;
