// A customer's tax identity (SPEC §14): its tax ids, checked for format (validator's isVAT:
// a pattern per country, no network and no registry look-up), and its billing address.
import isVATModule from 'validator/lib/isVAT.js';
import Type, { type Static } from 'typebox';
import { StringEnum } from '../../http/schemas.ts';
import { TAX_EXEMPT_VALUES } from '../../db/tables/customers.table.ts';

// The one validator file needed, not the whole package: Node hands this CommonJS file's
// `exports` over as the default import, so the function is its `default`.
const isVAT = (isVATModule as unknown as { default: (value: string, country: string) => boolean }).default;

/**
 * The tax id types accepted and the countries whose VAT format each is checked against:
 * an EU VAT number starts with its member state's prefix (Greece: EL), the others with the
 * country's own (GB…, CHE…, NO…MVA).
 */
const TAX_ID_COUNTRIES = {
  eu_vat: [
    'AT',
    'BE',
    'BG',
    'CY',
    'CZ',
    'DE',
    'DK',
    'EE',
    'EL',
    'ES',
    'FI',
    'FR',
    'HR',
    'HU',
    'IE',
    'IT',
    'LT',
    'LU',
    'LV',
    'MT',
    'NL',
    'PL',
    'PT',
    'RO',
    'SE',
    'SI',
    'SK',
  ],
  gb_vat: ['GB'],
  ch_vat: ['CH'],
  no_vat: ['NO'],
} as const;

export const TAX_ID_TYPES = Object.keys(TAX_ID_COUNTRIES) as (keyof typeof TAX_ID_COUNTRIES)[];
export type TaxIdType = (typeof TAX_ID_TYPES)[number];

/** At most this many tax ids on one customer. */
export const MAX_TAX_IDS = 5;

export const taxIdSchema = Type.Object(
  {
    type: StringEnum(TAX_ID_TYPES, { description: 'The kind of number' }),
    value: Type.String({
      minLength: 2,
      maxLength: 40,
      description: 'With its country prefix: DE123456789, GB123456789, CHE-123.456.789 MWST, NO123456789MVA',
      examples: ['DE123456789'],
    }),
  },
  { additionalProperties: false },
);
export type TaxId = Static<typeof taxIdSchema>;

export const taxIdsInput = Type.Array(taxIdSchema, {
  maxItems: MAX_TAX_IDS,
  description: 'Tax ids shown on documents, each checked for its format (not looked up).',
});

const line = (description: string) => Type.String({ minLength: 1, maxLength: 200, description });

export const addressSchema = Type.Object(
  {
    country: Type.String({ minLength: 2, maxLength: 2, description: 'ISO 3166-1 alpha-2, upper case' }),
    line1: line('Street and number'),
    line2: Type.Optional(line('Apartment, suite, building')),
    city: line('City'),
    postal_code: Type.String({ minLength: 1, maxLength: 20 }),
    state: Type.Optional(line('State, county or province')),
  },
  {
    additionalProperties: false,
    examples: [{ country: 'DE', line1: 'Unter den Linden 1', city: 'Berlin', postal_code: '10117' }],
  },
);
export type Address = Static<typeof addressSchema>;

export const taxExemptSchema = StringEnum(TAX_EXEMPT_VALUES, {
  description:
    '`none`: taxed; `exempt`: no tax; `reverse`: no tax, and invoices carry `reverse_charge: true` and say "Reverse charge" (SPEC §14).',
});

/**
 * The forms of `value` to check: as written (upper case, trimmed) and without the spaces,
 * dots and dashes people put in; a UK number also in the spaced form validator's pattern
 * wants ("GB123 4567 89"): the same number, however it was typed.
 */
function forms(value: string): string[] {
  const written = value.trim().toUpperCase();
  const compact = written.replace(/[\s.-]/g, '');
  const uk = /^GB(\d{3})(\d{4})(\d{2})(\d{3})?$/.exec(compact);
  const spaced = uk ? [`GB${uk[1]} ${uk[2]} ${uk[3]}${uk[4] === undefined ? '' : ` ${uk[4]}`}`] : [];
  return [written, compact, ...spaced];
}

/**
 * True when `value` has the format of a tax id of `type` (SPEC §14): its country prefix
 * (required: validator's isVAT accepts most numbers with or without it) followed by that
 * country's pattern, check digit included where validator knows one (CH). Format only: a
 * well-formed number may still not be registered — nothing is looked up.
 */
export function isValidTaxId(type: TaxIdType, value: string): boolean {
  const candidates = forms(value);
  return TAX_ID_COUNTRIES[type].some((prefix) =>
    candidates.some((candidate) => candidate.startsWith(prefix) && isVAT(candidate, prefix)),
  );
}
