// The JSON body parser: strict JSON with prototype-poisoning protection, and an empty
// body read as "no body" so `PUT …/cancel` with Content-Type: application/json and no
// body works (SPEC §2). Other content types are answered 415 by Fastify.
import type { FastifyInstance } from 'fastify';
import secureJson from 'secure-json-parse';
import { ValidationError } from './errors.ts';
import { noteJsonBodyText } from './text-guard.ts';

/** Makes JSON the only accepted body type (Fastify's text/plain parser goes too), parsed by ours. */
export function registerJsonBodyParser(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    const text = body as string;
    if (text.trim() === '') return done(null, undefined);
    try {
      const body: unknown = secureJson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' });
      noteJsonBodyText(body, text);
      done(null, body);
    } catch {
      done(forbiddenKeyError(text) ?? new ValidationError('request body is not valid JSON'), undefined);
    }
  });
}

/**
 * The 400 for valid JSON that secure-json-parse refused for a key that could reach an object's
 * prototype (`__proto__`, or `constructor` holding `prototype`), naming where it is:
 * `metadata must not have the key "__proto__"`. Undefined when `text` is not JSON at all.
 * JSON.parse is safe to run here: it makes `__proto__` an own property, it never sets a prototype.
 */
function forbiddenKeyError(text: string): ValidationError | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  const found = findForbiddenKey(value, []);
  if (!found) return undefined;
  const field = found.path.length === 0 ? undefined : found.path.join('.');
  return new ValidationError(`${field ?? 'request body'} must not have the key "${found.key}"`, field);
}

function findForbiddenKey(value: unknown, path: string[]): { path: string[]; key: string } | undefined {
  if (value === null || typeof value !== 'object') return undefined;
  if (Object.hasOwn(value, '__proto__')) return { path, key: '__proto__' };
  const constructor = (value as Record<string, unknown>).constructor;
  if (Object.hasOwn(value, 'constructor') && constructor !== null && typeof constructor === 'object') {
    if (Object.hasOwn(constructor, 'prototype')) return { path, key: 'constructor' };
  }
  for (const [key, child] of Object.entries(value)) {
    const found = findForbiddenKey(child, [...path, key]);
    if (found) return found;
  }
  return undefined;
}
