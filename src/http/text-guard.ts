// PostgreSQL text cannot hold U+0000 (SQLite can): a NUL in a query, path or body value would
// be a 500 on one database and stored on the other. It is refused up front, the same on both.
import type { FastifyInstance } from 'fastify';
import { ValidationError } from './errors.ts';

/**
 * Bodies the JSON parser found free of U+0000 from their text alone (json-body.ts): JSON can
 * only write U+0000 as the escape `\u0000`, so a text without it parses to no NUL anywhere —
 * the walk below is skipped for them (a large body is otherwise walked key by key).
 */
const nulFreeBodies = new WeakSet<object>();

/** Records that `body`, parsed from `text`, holds no U+0000 when `text` shows it cannot. */
export function noteJsonBodyText(body: unknown, text: string): void {
  if (body !== null && typeof body === 'object' && !text.includes('\\u0000')) nulFreeBodies.add(body);
}

/** The dotted path of the first string holding U+0000 within `value`, or undefined. */
function nulAt(value: unknown, path: string, depth = 0): string | undefined {
  if (typeof value === 'string') return value.includes('\u0000') ? path : undefined;
  // Raw bodies (the provider notify route keeps bytes) are not text values: left alone.
  if (depth > 32 || value === null || typeof value !== 'object' || ArrayBuffer.isView(value)) return undefined;
  for (const [key, item] of Object.entries(value)) {
    const childPath = path ? `${path}.${key}` : key;
    if (key.includes('\u0000')) return childPath;
    const found = nulAt(item, childPath, depth + 1);
    if (found !== undefined) return found;
  }
  return undefined;
}

/**
 * Answers 400 `validation_error` naming the field when any query, path or JSON body value
 * (or key) contains U+0000, before validation and before any database access.
 */
export function registerTextGuard(app: FastifyInstance): void {
  // A callback hook, not an async one: it runs on every request and never waits.
  app.addHook('preValidation', (request, _reply, done) => {
    for (const part of [request.params, request.query, request.body]) {
      if (part === request.body && typeof part === 'object' && part !== null && nulFreeBodies.has(part)) continue;
      const field = nulAt(part, '');
      if (field !== undefined) {
        done(new ValidationError(`${field || 'value'} must not contain the NUL character`, field || undefined));
        return;
      }
    }
    done();
  });
}
