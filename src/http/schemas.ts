// Schema pieces every route shares: error bodies, metadata, timestamps, ids. Routes use
// these so that validation, serialization and /openapi.json come from one definition.
// Resources are TypeBox schemas (the API type is `Static<typeof X>`); `Nullable` and
// `StringEnum` keep the JSON Schema the API has always published (`type: [T, 'null']`,
// `type: 'string'` + `enum`) rather than TypeBox's `anyOf` forms.
import Type, { type Static, type TObject, type TSchema, type TUnsafe } from 'typebox';
import { MAX_TIMESTAMP, MIN_TIMESTAMP } from '../shared/timestamps.ts';
import { type KeyPicker, keyPicker } from '../shared/object-shapes.ts';
import { ERROR_CODES } from './errors.ts';
import { DEFAULT_LIMIT, type Page, pageSchema, type SimpleList, simpleListSchema } from './lists.ts';

/** Error envelope (SPEC §2). */
export const errorSchema = {
  $id: 'Error',
  type: 'object',
  description: 'Error envelope: branch on the HTTP status, then on `code`.',
  examples: [{ code: 'not_found', message: 'customer cus_01JD3Q7Z8X9Y0A1B2C3D4E5F6G not found', details: null }],
  required: ['code', 'message', 'details'],
  properties: {
    code: {
      type: 'string',
      enum: [...ERROR_CODES],
    },
    message: { type: 'string' },
    details: {},
  },
} as const;

/** The 400 body: the envelope plus the problem-details shape (SPEC §2). */
export const validationErrorSchema = {
  $id: 'ValidationError',
  type: 'object',
  description: 'Request-validation failure: both the envelope and the problem-details shape.',
  examples: [
    {
      code: 'validation_error',
      message: 'email must be a valid email address',
      details: null,
      status: 400,
      title: 'Bad Request',
      detail: 'email must be a valid email address',
      errors: [{ name: 'email', reason: 'must be a valid email address' }],
    },
  ],
  required: ['code', 'message', 'details', 'status', 'title', 'detail', 'errors'],
  properties: {
    code: { type: 'string', const: 'validation_error' },
    message: { type: 'string' },
    details: { type: 'null' },
    status: { type: 'integer', const: 400 },
    title: { type: 'string', const: 'Bad Request' },
    detail: { type: 'string' },
    errors: {
      type: 'array',
      items: {
        type: 'object',
        required: ['name', 'reason'],
        properties: { name: { type: 'string' }, reason: { type: 'string' } },
      },
    },
  },
} as const;

export const SHARED_SCHEMAS = [errorSchema, validationErrorSchema];

/** What each error status means, and one realistic body of it (documentation only). */
const ERROR_STATUSES: Record<number, { description: string; example?: object }> = {
  400: { description: 'Malformed request or invalid field', example: validationErrorSchema.examples[0] },
  401: {
    description: 'Missing or invalid API key',
    example: { code: 'authentication_error', message: 'missing API key', details: null },
  },
  403: {
    description: 'The API key lacks the scope',
    example: { code: 'permission_error', message: 'this API key has read scope; write is required', details: null },
  },
  404: { description: 'No such resource', example: errorSchema.examples[0] },
  409: {
    description: 'Conflicts with the current state',
    example: { code: 'conflict', message: 'a customer with this email already exists', details: null },
  },
  413: {
    description: 'Body over 1 MiB',
    example: { code: 'validation_error', message: 'request body is larger than 1048576 bytes', details: null },
  },
  415: {
    description: 'Body is not JSON',
    example: { code: 'validation_error', message: 'Content-Type must be application/json', details: null },
  },
  422: {
    description: 'Valid request, invalid for the resource state',
    example: { code: 'invalid_state', message: 'plan plan_01JD3Q7Z8X9Y0A1B2C3D4E5F6G is archived', details: null },
  },
  429: {
    description: 'Rate limited: retry after `Retry-After` seconds',
    example: { code: 'rate_limit_error', message: 'rate limit exceeded, retry in 12 seconds', details: null },
  },
  500: {
    description: 'Unexpected server error',
    example: { code: 'internal_error', message: 'internal server error', details: null },
  },
  503: {
    description: 'The instance is shutting down: retry, another instance answers',
    example: { code: 'internal_error', message: 'the server is shutting down', details: null },
  },
};

/**
 * Response schemas for the given error statuses, for a route's `schema.response`: the named
 * `ValidationError` (400) or `Error` component, described, with a realistic example.
 */
export function errorResponses(...statuses: number[]): Record<number, object> {
  const responses: Record<number, object> = {};
  for (const status of statuses) {
    const { description = 'Error', example } = ERROR_STATUSES[status] ?? {};
    responses[status] = {
      description,
      ...(status === 400 ? { $ref: 'ValidationError#' } : { $ref: 'Error#' }),
      ...(example ? { examples: [example] } : {}),
    };
  }
  return responses;
}

/** A schema published as a named component: it carries `$id` (and one example). */
type Named = TSchema & { $id?: string; examples?: unknown[] };

function componentId(schema: Named): string {
  if (typeof schema.$id !== 'string') throw new Error('a referenced schema needs an $id (its component name)');
  return schema.$id;
}

/**
 * A reference to the named schema `schema` (`{$ref: 'Customer#'}`), typed as the schema: routes
 * and other components use it instead of the schema itself, so /openapi.json shows the
 * component (`#/components/schemas/Customer`) and Ajv and the serializer see one definition.
 * The schema must be registered with the app (routes/api-document.ts). Throws
 * when `schema` has no `$id`.
 */
export function ref<S extends Named>(schema: S, options: { description?: string } = {}): TUnsafe<Static<S>> {
  return Type.Unsafe<Static<S>>({ $ref: `${componentId(schema)}#`, ...options });
}

/**
 * A success response of the named schema: the reference, `description` (the response's
 * description in /openapi.json) and the component's own example (the response's example).
 */
export function responseOf<S extends Named>(schema: S, description: string): TUnsafe<Static<S>> {
  return Type.Unsafe<Static<S>>({
    $ref: `${componentId(schema)}#`,
    description,
    ...(schema.examples ? { examples: schema.examples.slice(0, 1) } : {}),
  });
}

/**
 * The named list envelope `{data, meta}` (SPEC §2 "Lists", http/lists.ts `pageSchema`) of the
 * named schema `item`, e.g. `CustomerList` of `Customer`, with an example built from the item's.
 */
export function pageOf<S extends Named>(name: string, item: S): TUnsafe<Page<Static<S>>> {
  const example = item.examples?.[0];
  return Type.Unsafe<Page<Static<S>>>({
    $id: name,
    description: `A page of ${componentId(item)} objects and where it is in the whole list.`,
    ...pageSchema(ref(item)),
    ...(example ? { examples: [{ data: [example], meta: { total: 1, page: 0, limit: DEFAULT_LIMIT } }] } : {}),
  });
}

/** The named dunning list envelope `{data, total}` (SPEC §2: no `meta`) of the named schema `item`. */
export function simpleListOfSchema<S extends Named>(name: string, item: S): TUnsafe<SimpleList<Static<S>>> {
  const example = item.examples?.[0];
  return Type.Unsafe<SimpleList<Static<S>>>({
    $id: name,
    description: `A page of ${componentId(item)} objects and the total of the whole list.`,
    ...simpleListSchema(ref(item)),
    ...(example ? { examples: [{ data: [example], total: 1 }] } : {}),
  });
}

/**
 * `schema` or null, written as `type: [schema.type, 'null']` (one schema, not an `anyOf`):
 * the OpenAPI document and the validation messages stay those of the plain type. `schema`
 * must have a single string `type`.
 */
export function Nullable<T extends TSchema>(schema: T): TUnsafe<Static<T> | null> {
  const { type } = schema as unknown as { type: string };
  return Type.Unsafe<Static<T> | null>({ ...schema, type: [type, 'null'] });
}

/** A string among `values`: `{type: 'string', enum}` typed as the union of `values`. */
export function StringEnum<const V extends readonly string[]>(
  values: V,
  options: { description?: string; examples?: V[number][]; default?: V[number] } = {},
): TUnsafe<V[number]> {
  return Type.Unsafe<V[number]>({ type: 'string', enum: [...values], ...options });
}

/** Each schema's picker (pickFields runs per row of every list page and per event). */
const PICKERS = new WeakMap<TObject, KeyPicker>();

/**
 * The resource `schema` describes, taken from `row` (a table row or any superset of the
 * resource): exactly the schema's properties, in its order. Responses need no such step
 * (the response schema drops other properties when it serializes); event `data` and other
 * values stored as JSON do, so that a new column never leaks into them. The object has one
 * shape per schema (shared/object-shapes.ts), which V8 serialises and copies fast.
 */
export function pickFields<S extends TObject>(schema: S, row: Static<S>): Static<S> {
  let pick = PICKERS.get(schema);
  if (pick === undefined) {
    pick = keyPicker(Object.keys(schema.properties));
    PICKERS.set(schema, pick);
  }
  return pick(row as Record<string, unknown>) as Static<S>;
}

/** ISO 8601 UTC timestamp with milliseconds. */
export const timestamp = Type.String({ format: 'date-time' });
export const nullableTimestamp = Nullable(timestamp);

/**
 * A date-time a client sends: RFC 3339, and between MIN_TIMESTAMP and MAX_TIMESTAMP once
 * converted to UTC (so `9999-12-31T23:00:00-05:00`, which is in year 10000, is refused).
 * Every date-time input of the API uses this (400 `validation_error` otherwise); the bounds
 * are the stored range of src/shared/timestamps.ts. `formatMinimum`/`formatMaximum` are
 * ajv-formats keywords, comparing instants.
 */
export const timestampInput = Type.String({
  format: 'date-time',
  formatMinimum: MIN_TIMESTAMP,
  formatMaximum: MAX_TIMESTAMP,
  description: `ISO 8601 date-time from ${MIN_TIMESTAMP} to ${MAX_TIMESTAMP}.`,
});
export const nullableTimestampInput = Nullable(timestampInput);

/** Metadata: string→string, ≤ 50 keys, keys ≤ 40 chars, values ≤ 500 chars (SPEC §2). */
export const metadataSchema = Type.Unsafe<Record<string, string>>({
  type: 'object',
  description: 'Your own key/value pairs: up to 50 keys of ≤ 40 characters, string values of ≤ 500 characters.',
  maxProperties: 50,
  propertyNames: { minLength: 1, maxLength: 40 },
  additionalProperties: { type: 'string', maxLength: 500 },
});

/** The metadata as responses carry it (no limits needed to serialize). */
export const metadataOut = Type.Unsafe<Record<string, string>>({
  type: 'object',
  additionalProperties: { type: 'string' },
});

/** Path parameter `{id}` — any string; malformed ids are answered 404 by the service. */
export const idParams = Type.Object({ id: Type.String({ maxLength: 64 }) });

/** Security requirement for routes that need an API key (either header). */
export const API_KEY_SECURITY: { [scheme: string]: string[] }[] = [{ bearerAuth: [] }, { apiKeyHeader: [] }];
