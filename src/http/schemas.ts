// Schema pieces every route shares: error bodies, metadata, timestamps, ids. Routes use
// these so that validation, serialization and /openapi.json come from one definition.
// Resources are TypeBox schemas (the API type is `Static<typeof X>`); `Nullable` and
// `StringEnum` keep the JSON Schema the API has always published (`type: [T, 'null']`,
// `type: 'string'` + `enum`) rather than TypeBox's `anyOf` forms.
import Type, { type Static, type TObject, type TSchema, type TUnsafe } from 'typebox';
import { MAX_TIMESTAMP, MIN_TIMESTAMP } from '../shared/timestamps.ts';
import { ERROR_CODES } from './errors.ts';

/** Error envelope (SPEC §2). */
export const errorSchema = {
  $id: 'Error',
  type: 'object',
  description: 'Error envelope: branch on the HTTP status, then on `code`.',
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

const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: 'Malformed request or invalid field',
  401: 'Missing or invalid API key',
  403: 'The API key lacks the scope',
  404: 'No such resource',
  409: 'Conflicts with the current state',
  413: 'Body over 1 MiB',
  415: 'Body is not JSON',
  422: 'Valid request, invalid for the resource state',
  429: 'Rate limited',
};

/** Response schemas for the given error statuses, for a route's `schema.response`. */
export function errorResponses(...statuses: number[]): Record<number, object> {
  const responses: Record<number, object> = {};
  for (const status of statuses) {
    responses[status] = {
      description: ERROR_DESCRIPTIONS[status] ?? 'Error',
      ...(status === 400 ? { $ref: 'ValidationError#' } : { $ref: 'Error#' }),
    };
  }
  return responses;
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

/**
 * The resource `schema` describes, taken from `row` (a table row or any superset of the
 * resource): exactly the schema's properties, in its order. Responses need no such step
 * (the response schema drops other properties when it serializes); event `data` and other
 * values stored as JSON do, so that a new column never leaks into them.
 */
export function pickFields<S extends TObject>(schema: S, row: Static<S>): Static<S> {
  const picked: Record<string, unknown> = {};
  for (const key of Object.keys(schema.properties)) picked[key] = (row as Record<string, unknown>)[key];
  return picked as Static<S>;
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
