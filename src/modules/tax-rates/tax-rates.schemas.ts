// The tax rate resource (SPEC §14) and its request bodies, defined once: these TypeBox
// schemas validate, serialize and document the routes; `TaxRate` and the inputs are their
// static types.
import Type, { type Static } from 'typebox';
import { metadataOut, metadataSchema, Nullable, pageOf, timestamp } from '../../http/schemas.ts';

export const TAX_RATE_SORT_FIELDS = ['created_at', 'display_name'] as const;
/** Fields fixed at creation (like a plan's price): a different rate is a new tax rate. */
export const IMMUTABLE_TAX_RATE_FIELDS = ['percentage', 'inclusive'] as const;
/** At most this many tax rates on one subscription, plan or customer. */
export const MAX_TAX_RATES = 10;

const TAX_RATE_EXAMPLE = {
  id: 'txr_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
  display_name: 'VAT',
  percentage: 19,
  inclusive: false,
  country: 'DE',
  state: null,
  jurisdiction: 'DE',
  active: true,
  metadata: {},
  created_at: '2026-01-15T10:00:00.000Z',
  updated_at: '2026-01-15T10:00:00.000Z',
};

export const taxRateSchema = Type.Object(
  {
    id: Type.String({ examples: ['txr_01JD3Q7Z8X9Y0A1B2C3D4E5F6G'] }),
    display_name: Type.String({ description: 'What invoices call the tax: "VAT", "Sales tax".' }),
    percentage: Type.Number({ description: 'The rate in percent, 0–100, up to 4 decimals (exact).' }),
    inclusive: Type.Boolean({
      description:
        'true: prices already contain the tax (it is shown, the total does not change); false: the tax is added.',
    }),
    country: Nullable(Type.String({ description: 'ISO 3166-1 alpha-2' })),
    state: Nullable(Type.String()),
    jurisdiction: Nullable(Type.String()),
    active: Type.Boolean({
      description:
        'false = archived: cannot be newly attached; keeps applying where it is attached already (as Stripe).',
    }),
    metadata: metadataOut,
    created_at: timestamp,
    updated_at: timestamp,
  },
  {
    $id: 'TaxRate',
    description:
      'A tax applied to invoices (SPEC §14): from the subscription, else its plan, else the customer, else DEFAULT_TAX_RATE_IDS.',
    examples: [TAX_RATE_EXAMPLE],
  },
);

export const taxRateListSchema = pageOf('TaxRateList', taxRateSchema);

/** A tax rate as the API returns it. */
export type TaxRate = Static<typeof taxRateSchema>;

const place = (description: string) => Type.String({ minLength: 1, maxLength: 100, description });

export const createTaxRateBody = Type.Object(
  {
    display_name: Type.String({ minLength: 1, maxLength: 100, examples: ['VAT'] }),
    // The "4 decimals" bound is checked by the service, which says so.
    percentage: Type.Number({ minimum: 0, maximum: 100, examples: [19] }),
    inclusive: Type.Boolean(),
    country: Type.Optional(
      Type.String({ minLength: 2, maxLength: 2, description: 'ISO 3166-1 alpha-2, upper case', examples: ['DE'] }),
    ),
    state: Type.Optional(place('A state or province (ISO 3166-2 subdivision code, without the country)')),
    jurisdiction: Type.Optional(place('Free text: the tax jurisdiction')),
    active: Type.Optional(Type.Boolean({ default: true })),
    metadata: Type.Optional(metadataSchema),
  },
  {
    additionalProperties: false,
    examples: [{ display_name: 'VAT', percentage: 19, inclusive: false, country: 'DE', jurisdiction: 'DE' }],
  },
);

const immutableFields = Object.fromEntries(
  IMMUTABLE_TAX_RATE_FIELDS.map((f) => [
    f,
    Type.Optional(Type.Unknown({ description: 'Immutable: refused with 400.' })),
  ]),
);

export const updateTaxRateBody = Type.Object(
  {
    display_name: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    active: Type.Optional(Type.Boolean()),
    metadata: Type.Optional(Nullable(metadataSchema)),
    ...immutableFields,
  },
  {
    additionalProperties: false,
    description:
      'Only `display_name`, `active` (false archives) and `metadata`; `percentage` and `inclusive` are immutable (create a new rate).',
    examples: [{ active: false }],
  },
);

export type CreateTaxRateInput = Static<typeof createTaxRateBody>;
/** The changes a client may ask for; the immutable fields never reach the service. */
export interface UpdateTaxRateInput {
  display_name?: string;
  active?: boolean;
  metadata?: Record<string, string> | null;
}

/**
 * `tax_rate_ids` in a request body (subscriptions, plans, customers): distinct `txr_…` ids,
 * at most MAX_TAX_RATES; `[]` means none (the next list in the precedence applies).
 */
export const taxRateIdsInput = Type.Array(Type.String({ minLength: 1, maxLength: 64 }), {
  maxItems: MAX_TAX_RATES,
  uniqueItems: true,
  description:
    'Tax rates (`txr_…`, active) to apply; the most specific non-empty list wins: subscription > plan > customer > DEFAULT_TAX_RATE_IDS (SPEC §14).',
  examples: [['txr_01JD3Q7Z8X9Y0A1B2C3D4E5F6G']],
});

/** `tax_rate_ids` in a response. */
export const taxRateIdsOut = Type.Array(Type.String(), {
  description: 'The tax rates (`txr_…`) attached here; [] for none (SPEC §14 precedence).',
});
