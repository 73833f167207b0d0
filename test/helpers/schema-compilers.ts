// Route schema compilers shared by every app a test process builds. Fastify compiles each
// route's validators (Ajv) and response serializers (fast-json-stringify) for every app, at
// start-up: ≈ 520 of them, over a second of CPU, more than most test files spend on their
// tests. These are Fastify's own default compilers, each result remembered by the schema's
// JSON (the second app with the same routes compiles nothing) and compiled on first use (a
// test file compiles what its requests reach). The serializers are the app's own
// (src/http/serializer-compiler.ts: each given only the named schemas it references). Apps
// built outside the tests (server.ts, so the CLI and process tests) still compile every
// schema at start-up.
import { createRequire } from 'node:module';
import type { FastifyServerOptions } from 'fastify';
import { buildSerializer as appSerializers } from '../../src/http/serializer-compiler.ts';

/** What Fastify gives a compiler for one route part (validators) or status (serializers). */
interface RouteSchema {
  schema: unknown;
  method: string;
  url: string;
  httpPart?: string;
  httpStatus?: string;
  contentType?: string;
}
/** A compiled validator (Ajv: reports through `errors`) or serializer. */
type Compiled = ((...args: unknown[]) => unknown) & { errors?: unknown };
type Compile = (route: RouteSchema) => Compiled;
/** Fastify's compiler factories, by the part of their signature used here. */
type Factory = (externalSchemas: unknown, options: unknown) => Compile;

// Fastify's default validators, from its own dependencies (it builds them the same way when none are given).
const require = createRequire(import.meta.url);
const defaultValidators = (require('@fastify/ajv-compiler') as () => Factory)();

// Compiled results by the compiler's pool (its shared schemas, then its options, as JSON),
// then by the route's part. In levels, because the schemas are ≈ 125 KB of JSON: one flat key
// per route (pool + route) had every look-up build and hash a new string that long, ≈ 0.3 s
// per app.
type Cache = Map<string, Compiled>;
const validators = new Map<string, Map<string, Cache>>();
const serializers = new Map<string, Map<string, Cache>>();

// An app asks for its compilers four times (validators and serializers, twice each), each
// time with the same named schemas (≈ 125 KB of JSON): their text is kept for the schema
// objects it was made of, so each app writes it once, not four times (≈ 3 ms of CPU an app).
let lastPool: { schemas: unknown[]; json: string } | undefined;

/** The JSON of `externalSchemas` (an object of named schemas), reused while they are the same objects. */
function schemasJson(externalSchemas: unknown): string {
  const schemas = externalSchemas !== null && typeof externalSchemas === 'object' ? Object.values(externalSchemas) : [];
  const same =
    lastPool !== undefined &&
    schemas.length > 0 &&
    lastPool.schemas.length === schemas.length &&
    schemas.every((schema, i) => schema === lastPool!.schemas[i]);
  if (!same) lastPool = { schemas, json: JSON.stringify(externalSchemas) ?? 'undefined' };
  return lastPool!.json;
}

/** The results cached for one pool, made empty on first use. */
function poolCache(caches: Map<string, Map<string, Cache>>, externalSchemas: unknown, options: unknown): Cache {
  // The same string each time for the same schemas: hashed once, not at each look-up.
  const schemas = schemasJson(externalSchemas);
  let byOptions = caches.get(schemas);
  if (!byOptions) caches.set(schemas, (byOptions = new Map()));
  const key = JSON.stringify(options) ?? 'undefined';
  let cache = byOptions.get(key);
  if (!cache) byOptions.set(key, (cache = new Map()));
  return cache;
}

/**
 * A function that compiles with `make` when first called, then behaves as its result: it
 * returns what the compiled function returns and, after each call, carries its `errors` (how
 * an Ajv validator reports, and where Fastify reads them).
 */
function compileOnFirstUse(make: () => Compiled): Compiled {
  let compiled: Compiled | undefined;
  const lazy: Compiled = (...args) => {
    compiled ??= make();
    const result = compiled(...args);
    lazy.errors = compiled.errors;
    return result;
  };
  return lazy;
}

/** Compiles `route` with the factory's compiler, once per schema JSON and process, on first use. */
function sharedCompiler(
  caches: Map<string, Map<string, Cache>>,
  factory: Factory,
  keyOf: (route: RouteSchema) => unknown[],
) {
  return (externalSchemas: unknown, options: unknown): Compile => {
    const cache = poolCache(caches, externalSchemas, options);
    let compile: Compile | undefined;
    return (route) => {
      const key = JSON.stringify([route.schema, ...keyOf(route)]);
      let compiled = cache.get(key);
      if (!compiled) {
        compiled = compileOnFirstUse(() => (compile ??= factory(externalSchemas, options))(route));
        cache.set(key, compiled);
      }
      return compiled;
    };
  };
}

const buildValidator = sharedCompiler(validators, defaultValidators, (route) => [
  route.method,
  route.url,
  route.httpPart,
]);
const buildSerializer = sharedCompiler(serializers, appSerializers as unknown as Factory, (route) => [
  route.method,
  route.url,
  route.httpStatus,
  route.contentType,
]);

/**
 * For buildApp's `schemaController`. Behaviour is Fastify's default but for one detail: with
 * custom compilers Fastify leaves a headers schema's property names as written instead of
 * lower-casing them, and this app's (POST /api/notify's signature headers) are lower-case.
 */
export const SHARED_SCHEMA_COMPILERS = {
  compilersFactory: { buildValidator, buildSerializer },
  // Fastify's own types of these factories are overloads per compiler flavour (Ajv, JTD).
} as unknown as NonNullable<FastifyServerOptions['schemaController']>;
