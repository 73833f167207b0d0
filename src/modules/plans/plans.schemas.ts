// JSON schemas of the plans routes: they validate, serialize and document.
import { metadataOut, metadataSchema, timestamp } from '../../http/schemas.ts';

export const PLAN_SORT_FIELDS = ['created_at', 'amount', 'name'] as const;
export const PLAN_INTERVALS = ['day', 'week', 'month', 'year'] as const;
/**
 * The largest `interval_count` per interval: a billing period is at most three years, as
 * Stripe bounds a price's recurring interval. Longer periods buy nothing a customer needs
 * and walk `current_period_end` towards year 9999 a few payments at a time.
 */
export const MAX_INTERVAL_COUNT = { day: 1095, week: 156, month: 36, year: 3 } as const;
/** Fields fixed at creation (SPEC §3: prices are immutable). */
export const IMMUTABLE_PLAN_FIELDS = [
  'amount',
  'currency',
  'interval',
  'interval_count',
  'trial_period_days',
] as const;

export const planSchema = {
  type: 'object',
  required: [
    'id',
    'name',
    'amount',
    'currency',
    'interval',
    'interval_count',
    'trial_period_days',
    'active',
    'metadata',
    'created_at',
    'updated_at',
  ],
  properties: {
    id: { type: 'string', examples: ['plan_01JD3Q7Z8X9Y0A1B2C3D4E5F6G'] },
    name: { type: 'string' },
    amount: { type: 'integer', description: 'Price per period in minor units (5000 = 50.00).' },
    currency: { type: 'string', description: 'ISO 4217, upper-case.' },
    interval: { type: 'string', enum: [...PLAN_INTERVALS] },
    interval_count: { type: 'integer' },
    trial_period_days: { type: 'integer' },
    active: { type: 'boolean', description: 'false = archived: no new subscriptions.' },
    metadata: metadataOut,
    created_at: timestamp,
    updated_at: timestamp,
  },
} as const;

export const createPlanBody = {
  type: 'object',
  required: ['name', 'amount', 'currency', 'interval'],
  additionalProperties: false,
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 255, examples: ['Pro monthly'] },
    amount: { type: 'integer', minimum: 0, maximum: 1_000_000_000_000, examples: [5000] },
    // No `pattern`: its failure could only say "not in the expected format"; the service
    // checks the code against ISO 4217 and says so (e.g. for "usd").
    currency: {
      type: 'string',
      minLength: 3,
      maxLength: 3,
      description: 'ISO 4217 code, upper-case.',
      examples: ['NGN'],
    },
    interval: { type: 'string', enum: [...PLAN_INTERVALS] },
    // The bound depends on `interval` (MAX_INTERVAL_COUNT); the service checks it and says so.
    interval_count: {
      type: 'integer',
      minimum: 1,
      default: 1,
      description: 'Intervals per billing period; at most three years: day ≤ 1095, week ≤ 156, month ≤ 36, year ≤ 3.',
    },
    trial_period_days: { type: 'integer', minimum: 0, maximum: 730, default: 0 },
    metadata: metadataSchema,
  },
} as const;

export const updatePlanBody = {
  type: 'object',
  additionalProperties: false,
  description: 'Only `name`, `active` and `metadata` change; prices are immutable (create a new plan).',
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 255 },
    active: { type: 'boolean' },
    metadata: { ...metadataSchema, type: ['object', 'null'] },
    // Listed so the error can say why they are refused (see plans.routes.ts).
    ...Object.fromEntries(
      IMMUTABLE_PLAN_FIELDS.map((f) => [f, { description: 'Immutable: refused with 400.' }]),
    ),
  },
} as const;

export interface CreatePlanInput {
  name: string;
  amount: number;
  currency: string;
  interval: (typeof PLAN_INTERVALS)[number];
  interval_count?: number;
  trial_period_days?: number;
  metadata?: Record<string, string>;
}

export interface UpdatePlanInput {
  name?: string;
  active?: boolean;
  metadata?: Record<string, string> | null;
}
