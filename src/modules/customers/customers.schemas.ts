// JSON schemas of the customers routes: they validate, serialize and document. Emails use
// JSON Schema's `idn-email` (RFC 6531), checked by isValidEmail (see EMAIL_FORMATS).
import { metadataOut, metadataSchema, timestamp } from '../../http/schemas.ts';
import { EMAIL_MAX_LENGTH, isValidEmail } from './customer-email.ts';

/**
 * The JSON-schema formats this module defines, for the app's validator (app.ts): the API
 * accepts exactly the addresses attribution accepts (SPEC §3).
 */
export const EMAIL_FORMATS = { 'idn-email': isValidEmail } as const;

export const CUSTOMER_SORT_FIELDS = ['created_at', 'updated_at', 'email', 'name'] as const;

export const customerSchema = {
  type: 'object',
  required: ['id', 'email', 'name', 'phone', 'metadata', 'created_at', 'updated_at'],
  properties: {
    id: { type: 'string', examples: ['cus_01JD3Q7Z8X9Y0A1B2C3D4E5F6G'] },
    email: { type: 'string', format: 'idn-email' },
    name: { type: ['string', 'null'] },
    phone: { type: ['string', 'null'] },
    metadata: metadataOut,
    created_at: timestamp,
    updated_at: timestamp,
  },
} as const;

const email = {
  type: 'string',
  format: 'idn-email',
  maxLength: EMAIL_MAX_LENGTH,
  examples: ['ada@example.com'],
} as const;
const name = { type: ['string', 'null'], minLength: 1, maxLength: 255, examples: ['Ada Lovelace'] } as const;
const phone = {
  type: ['string', 'null'],
  minLength: 1,
  maxLength: 40,
  examples: ['+2348012345678'],
} as const;

export const createCustomerBody = {
  type: 'object',
  required: ['email'],
  additionalProperties: false,
  properties: { email, name, phone, metadata: metadataSchema },
} as const;

export const updateCustomerBody = {
  type: 'object',
  additionalProperties: false,
  description:
    'Any of the fields. `name`/`phone` null clears them. `metadata` merges into the existing keys: a key set to "" is removed; `metadata: null` removes all.',
  properties: { email, name, phone, metadata: { ...metadataSchema, type: ['object', 'null'] } },
} as const;

export interface CreateCustomerInput {
  email: string;
  name?: string | null;
  phone?: string | null;
  metadata?: Record<string, string>;
}

export interface UpdateCustomerInput {
  email?: string;
  name?: string | null;
  phone?: string | null;
  metadata?: Record<string, string> | null;
}
