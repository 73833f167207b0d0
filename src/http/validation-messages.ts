// Turns JSON-schema validation failures into sentences for people ("Email is required",
// "limit must be an integer") — never validator internals such as `#/properties/…`.

interface SchemaFailure {
  keyword: string;
  instancePath: string;
  params: Record<string, unknown>;
  /** Set by Ajv when the failure is about an object's key (a `propertyNames` rule). */
  propertyName?: string;
}

const CONTEXT_NAMES: Record<string, string> = {
  body: 'request body',
  querystring: 'query string',
  params: 'path',
  headers: 'headers',
};

const TYPE_NAMES: Record<string, string> = {
  string: 'a string',
  integer: 'an integer',
  number: 'a number',
  boolean: 'a boolean (true or false)',
  object: 'an object',
  array: 'an array',
  null: 'null',
};

const FORMAT_NAMES: Record<string, string> = {
  email: 'a valid email address',
  'idn-email': 'a valid email address',
  'date-time': 'an ISO 8601 date-time such as 2026-11-21T18:58:03.120Z',
  uri: 'an absolute URL',
};

function fieldName(instancePath: string, child?: unknown): string {
  const parts = instancePath.split('/').filter((p) => p !== '');
  if (typeof child === 'string') parts.push(child);
  return parts.map((p) => p.replaceAll('~1', '/').replaceAll('~0', '~')).join('.');
}

function capitalize(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

function typeList(type: unknown): string {
  const types = Array.isArray(type) ? type : [type];
  return types.map((t) => TYPE_NAMES[String(t)] ?? String(t)).join(' or ');
}

/**
 * Words the first failure as a sentence and names the field it concerns.
 * `context` is Fastify's validation context (`body`, `querystring`, `params`, `headers`).
 */
export function validationMessage(
  failures: readonly SchemaFailure[],
  context: string | undefined,
): { message: string; field: string | undefined } {
  const failure = failures[0];
  if (!failure) return { message: 'invalid request', field: undefined };
  const p = failure.params;
  const path = fieldName(failure.instancePath);
  // Field names stay as the client wrote them; only a sentence-initial phrase is capitalised.
  const subject = path === '' ? capitalize(CONTEXT_NAMES[context ?? 'body'] ?? 'request') : path;
  const field = path === '' ? undefined : path;

  if (failure.propertyName !== undefined) {
    const key = failure.propertyName.slice(0, 60);
    const rule =
      failure.keyword === 'maxLength'
        ? `at most ${p.limit} characters`
        : failure.keyword === 'minLength'
          ? 'non-empty'
          : 'valid';
    return { message: `${subject} keys must be ${rule} (got "${key}")`, field };
  }

  switch (failure.keyword) {
    case 'required': {
      const missing = fieldName(failure.instancePath, p.missingProperty);
      // "Email is required" (SPEC §2); snake_case and nested names stay as written.
      const subject = /^[a-z]+$/.test(missing) ? capitalize(missing) : missing;
      return { message: `${subject} is required`, field: missing };
    }
    case 'additionalProperties': {
      const extra = fieldName(failure.instancePath, p.additionalProperty);
      return { message: `${extra} is not a known field`, field: extra };
    }
    case 'type':
      return { message: `${subject} must be ${typeList(p.type)}`, field };
    case 'format':
      return {
        message: `${subject} must be ${FORMAT_NAMES[String(p.format)] ?? `in ${p.format} format`}`,
        field,
      };
    case 'minLength':
      return {
        message: p.limit === 1 ? `${subject} must not be empty` : `${subject} must be at least ${p.limit} characters`,
        field,
      };
    case 'maxLength':
      return { message: `${subject} must be at most ${p.limit} characters`, field };
    case 'minimum':
    case 'exclusiveMinimum':
      return {
        message: `${subject} must be ${p.comparison === '>' ? 'greater than' : 'at least'} ${p.limit}`,
        field,
      };
    case 'maximum':
    case 'exclusiveMaximum':
      return {
        message: `${subject} must be ${p.comparison === '<' ? 'less than' : 'at most'} ${p.limit}`,
        field,
      };
    // ajv-formats' date-time bounds (schemas.ts timestampInput): the limit is an instant.
    case 'formatMaximum':
    case 'formatExclusiveMaximum':
      return { message: `${subject} must be no later than ${p.limit}`, field };
    case 'formatMinimum':
    case 'formatExclusiveMinimum':
      return { message: `${subject} must be no earlier than ${p.limit}`, field };
    case 'enum': {
      const allowed = (p.allowedValues as unknown[] | undefined)?.map(String).join(', ');
      return { message: `${subject} must be one of: ${allowed}`, field };
    }
    case 'const':
      return { message: `${subject} must be ${JSON.stringify(p.allowedValue)}`, field };
    case 'maxProperties':
      return { message: `${subject} must have at most ${p.limit} keys`, field };
    case 'minProperties':
      return { message: `${subject} must have at least ${p.limit} key${p.limit === 1 ? '' : 's'}`, field };
    case 'propertyNames':
      return { message: `${subject} has an invalid key "${p.propertyName}"`, field };
    case 'minItems':
      return {
        message: p.limit === 1 ? `${subject} must not be empty` : `${subject} must have at least ${p.limit} items`,
        field,
      };
    case 'maxItems':
      return { message: `${subject} must have at most ${p.limit} items`, field };
    case 'uniqueItems':
      return { message: `${subject} must not contain duplicates`, field };
    case 'pattern':
      return { message: `${subject} is not in the expected format`, field };
    default:
      return { message: `${subject} is invalid`, field };
  }
}
