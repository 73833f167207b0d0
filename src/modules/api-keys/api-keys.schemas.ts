// The API-key resource and its request bodies, defined once: these TypeBox schemas validate,
// serialize and document the routes, and `ApiKeyView` is the resource's static type. Never the secret (except once, at creation),
// never its hash.
import Type, { type Static } from 'typebox';
import {
  Nullable,
  nullableTimestamp,
  nullableTimestampInput,
  pageOf,
  StringEnum,
  timestamp,
} from '../../http/schemas.ts';
import { KEY_SCOPES } from '../../db/tables/api-keys.table.ts';

const API_KEY_EXAMPLE = {
  id: 'key_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
  name: 'billing-worker',
  scope: 'write',
  prefix: 'bk_7Hq2',
  last4: 'x9Qa',
  created_at: '2026-01-15T10:00:00.000Z',
  expires_at: null,
  revoked_at: null,
  last_used_at: '2026-01-15T11:42:10.000Z',
} as const;

export const apiKeySchema = Type.Object(
  {
    id: Type.String({ examples: ['key_01JD3Q7Z8X9Y0A1B2C3D4E5F6G'] }),
    name: Type.String(),
    scope: StringEnum(KEY_SCOPES),
    prefix: Type.String({ description: 'First characters of the key, to recognise it.' }),
    last4: Type.String({ description: 'Last four characters of the key.' }),
    created_at: timestamp,
    expires_at: nullableTimestamp,
    revoked_at: nullableTimestamp,
    last_used_at: Type.Unsafe<string | null>({
      ...nullableTimestamp,
      description: 'Recorded in batches; may lag by a few seconds.',
    }),
  },
  {
    $id: 'ApiKey',
    description: 'An API key as the API shows it: never the secret, never its hash.',
    examples: [API_KEY_EXAMPLE],
  },
);

/** An API key as the API shows it: never the secret, never its hash. */
export type ApiKeyView = Static<typeof apiKeySchema>;

export const apiKeyListSchema = pageOf('ApiKeyList', apiKeySchema);

/** A key just created or rotated: the view plus the secret, shown only in this response. */
export const createdKeySchema = Type.Object(
  {
    ...apiKeySchema.properties,
    key: Type.String({ description: 'The secret key. Shown only now.' }),
  },
  {
    $id: 'CreatedApiKey',
    description: 'A key just created or rotated: the view plus the secret, shown only in this response.',
    examples: [{ ...API_KEY_EXAMPLE, last_used_at: null, key: 'bk_7Hq2mB0kR4vZ1cN8pT3wL6yE5dFgx9Qa' }],
  },
);

export const createKeyBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 100 }),
    scope: Type.Optional(StringEnum(KEY_SCOPES, { default: 'write' })),
    expires_at: Type.Optional(nullableTimestampInput),
  },
  { additionalProperties: false, examples: [{ name: 'billing-worker', scope: 'write', expires_at: null }] },
);

/** The body of POST …/rotate: optional, so null (or none) means the default grace. */
export const rotateKeyBody = Type.Unsafe<{ grace?: string } | null>({
  ...Nullable(
    Type.Object(
      {
        grace: Type.Optional(Type.String({ description: 'Duration such as 30m, 24h or 7d.', examples: ['24h'] })),
      },
      { additionalProperties: false },
    ),
  ),
  description: 'Optional: without a body the old key keeps working for 24h.',
  examples: [{ grace: '1h' }],
});
