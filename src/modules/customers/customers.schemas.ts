// The customer resource and its request bodies, defined once: these TypeBox schemas validate,
// serialize and document the routes; `Customer` and the inputs are their static types. Emails
// use JSON Schema's `idn-email` (RFC 6531), checked by isValidEmail (see EMAIL_FORMATS).
import Type, { type Static } from 'typebox';
import { metadataOut, metadataSchema, Nullable, pageOf, ref, timestamp } from '../../http/schemas.ts';
import { discountRequestFields, discountSchema } from '../coupons/coupons.schemas.ts';
import { EMAIL_MAX_LENGTH, isValidEmail } from './customers.email.ts';
import { taxRateIdsInput, taxRateIdsOut } from '../tax-rates/tax-rates.schemas.ts';
import { addressSchema, taxExemptSchema, taxIdSchema, taxIdsInput } from './customers.tax.ts';

/**
 * The JSON-schema formats this module defines, for the app's validator (app.ts): the API
 * accepts exactly the addresses attribution accepts (SPEC §3).
 */
export const EMAIL_FORMATS = { 'idn-email': isValidEmail } as const;

export const CUSTOMER_SORT_FIELDS = ['created_at', 'updated_at', 'email', 'name'] as const;

const CUSTOMER_EXAMPLE = {
  id: 'cus_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
  email: 'ada@example.com',
  name: 'Ada Lovelace',
  phone: '+2348012345678',
  preferred_locale: 'de-AT',
  external_id: 'acct-4711',
  metadata: { crm_id: '4711' },
  test_clock: null,
  tax_exempt: 'none',
  tax_ids: [{ type: 'eu_vat', value: 'DE123456789' }],
  tax_rate_ids: [],
  address: { country: 'DE', line1: 'Unter den Linden 1', city: 'Berlin', postal_code: '10117' },
  created_at: '2026-01-15T10:00:00.000Z',
  updated_at: '2026-01-15T10:00:00.000Z',
};

export const customerSchema = Type.Object(
  {
    id: Type.String({ examples: ['cus_01JD3Q7Z8X9Y0A1B2C3D4E5F6G'] }),
    email: Type.String({ format: 'idn-email' }),
    name: Nullable(Type.String()),
    phone: Nullable(Type.String()),
    preferred_locale: Nullable(
      Type.String({
        description:
          'The BCP 47 tag (as given) whose language — `en`, `fr`, `de`, `es` or `pt` — the hosted invoice pages and PDFs use, with its number and date formats; null: `en` (SPEC §14).',
      }),
    ),
    external_id: Nullable(
      Type.String({
        description:
          "The client's own key for the customer, unique among live customers; usage events may name the customer by it (SPEC §15).",
      }),
    ),
    metadata: metadataOut,
    test_clock: Nullable(
      Type.String({
        description: 'The test clock (`clock_…`) whose time the customer lives in (SPEC §11); null: real time.',
      }),
    ),
    tax_exempt: taxExemptSchema,
    tax_ids: Type.Array(taxIdSchema, { description: 'Tax ids shown on documents (format-checked).' }),
    tax_rate_ids: taxRateIdsOut,
    address: Nullable(addressSchema),
    created_at: timestamp,
    updated_at: timestamp,
  },
  {
    $id: 'Customer',
    description: 'Someone who pays: the email is unique among live customers.',
    examples: [CUSTOMER_EXAMPLE],
  },
);

export const customerListSchema = pageOf('CustomerList', customerSchema);

/**
 * One customer with its credit balances and discount (SPEC §14): GET /api/customers/{id} only. Lists,
 * changes and `customer.*` events show the plain Customer.
 */
export const customerDetailSchema = Type.Object(
  {
    ...customerSchema.properties,
    balances: Type.Record(Type.String({ pattern: '^[A-Z]{3}$' }), Type.Integer(), {
      description:
        'Credit balance per currency (ISO 4217) in minor units: what payments left over beyond the invoices they paid, less what later invoices took (their `applied_balance`). Only non-zero balances are listed; `{}` when there are none.',
    }),
    discount: Type.Optional(
      ref(discountSchema, {
        description:
          "The customer's own discount, applied to all their subscriptions' invoices (SPEC §14); absent when there is none.",
      }),
    ),
  },
  {
    $id: 'CustomerDetail',
    description: 'A customer, its credit balances and its discount (GET /api/customers/{id}).',
    examples: [{ ...CUSTOMER_EXAMPLE, balances: { NGN: 25000 } }],
  },
);

/** A customer with its balances, as GET /api/customers/{id} returns it. */
export type CustomerDetail = Static<typeof customerDetailSchema>;

/** A customer as the API returns it. */
export type Customer = Static<typeof customerSchema>;

const email = Type.String({ format: 'idn-email', maxLength: EMAIL_MAX_LENGTH, examples: ['ada@example.com'] });
const name = Nullable(Type.String({ minLength: 1, maxLength: 255, examples: ['Ada Lovelace'] }));
const phone = Nullable(Type.String({ minLength: 1, maxLength: 40, examples: ['+2348012345678'] }));
const externalId = Nullable(
  Type.String({
    minLength: 1,
    maxLength: 255,
    examples: ['acct-4711'],
    description: 'Your own key for the customer, unique among live customers (409 otherwise); null clears it.',
  }),
);
const preferredLocale = Nullable(
  Type.String({
    minLength: 1,
    maxLength: 35,
    examples: ['de-AT'],
    description:
      'A BCP 47 language tag whose language is `en`, `fr`, `de`, `es` or `pt` (`de`, `de-AT`, `pt-BR`); stored as given. Any other: 400. null: `en`.',
  }),
);

export const createCustomerBody = Type.Object(
  {
    email,
    name: Type.Optional(name),
    phone: Type.Optional(phone),
    preferred_locale: Type.Optional(preferredLocale),
    external_id: Type.Optional(externalId),
    metadata: Type.Optional(metadataSchema),
    test_clock: Type.Optional(
      Type.String({
        maxLength: 64,
        description:
          "A test clock id (`clock_…`): the customer and everything it owns live in that clock's time, for good (SPEC §11). Only with TEST_CLOCKS=true.",
      }),
    ),
    ...discountRequestFields,
    tax_exempt: Type.Optional(taxExemptSchema),
    tax_ids: Type.Optional(taxIdsInput),
    tax_rate_ids: Type.Optional(taxRateIdsInput),
    address: Type.Optional(Nullable(addressSchema)),
  },
  {
    additionalProperties: false,
    examples: [
      { email: 'ada@example.com', name: 'Ada Lovelace', phone: '+2348012345678', metadata: { crm_id: '4711' } },
    ],
  },
);

export const updateCustomerBody = Type.Object(
  {
    email: Type.Optional(email),
    name: Type.Optional(name),
    phone: Type.Optional(phone),
    preferred_locale: Type.Optional(preferredLocale),
    external_id: Type.Optional(externalId),
    metadata: Type.Optional(Nullable(metadataSchema)),
    coupon: Type.Optional(
      Nullable(
        Type.String({
          maxLength: 64,
          description:
            "A coupon id to apply to all the customer's subscriptions (replacing their discount); null removes it.",
        }),
      ),
    ),
    promotion_code: discountRequestFields.promotion_code,
    tax_exempt: Type.Optional(taxExemptSchema),
    tax_ids: Type.Optional(taxIdsInput),
    tax_rate_ids: Type.Optional(taxRateIdsInput),
    address: Type.Optional(Nullable(addressSchema)),
  },
  {
    additionalProperties: false,
    description:
      'Any of the fields. `name`/`phone`/`preferred_locale`/`address` null clears them; `tax_ids` and `tax_rate_ids` replace the lists (`[]` empties them). `metadata` merges into the existing keys: a key set to "" is removed; `metadata: null` removes all.',
    examples: [{ name: 'Ada King', metadata: { crm_id: '4712' } }],
  },
);

export type CreateCustomerInput = Static<typeof createCustomerBody>;
export type UpdateCustomerInput = Static<typeof updateCustomerBody>;
