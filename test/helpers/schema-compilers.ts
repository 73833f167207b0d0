// Route schema compilers shared by every app a test process builds. Fastify compiles each
// route's validators (Ajv) and response serializers (fast-json-stringify) anew for every
// app: about 100 ms of CPU, most of what building a test app costs. These are Fastify's
// own default compilers, remembering each result by the schema's JSON, so the second app
// with the same routes compiles nothing.
import { createRequire } from 'node:module';
import type { FastifyServerOptions } from 'fastify';

/** What Fastify gives a compiler for one route part (validators) or status (serializers). */
interface RouteSchema {
  schema: unknown;
  method: string;
  url: string;
  httpPart?: string;
  httpStatus?: string;
  contentType?: string;
}
type Compile = (route: RouteSchema) => unknown;
/** Fastify's compiler factories, by the part of their signature used here. */
type Factory = (externalSchemas: unknown, options: unknown) => Compile;

// Fastify's defaults, from its own dependencies (it builds them the same way when none are given).
const require = createRequire(import.meta.url);
const defaultValidators = (require('@fastify/ajv-compiler') as () => Factory)();
const defaultSerializers = (require('@fastify/fast-json-stringify-compiler') as () => Factory)();

const validators = new Map<string, unknown>();
const serializers = new Map<string, unknown>();

/** Returns the cached value of `key`, or makes, caches and returns it. */
function remember<T>(cache: Map<string, unknown>, key: string, make: () => T): T {
  if (!cache.has(key)) cache.set(key, make());
  return cache.get(key) as T;
}

const buildValidator: Factory = (externalSchemas, options) => {
  const pool = JSON.stringify([externalSchemas, options]);
  let compile: Compile | undefined;
  return (route) =>
    remember(validators, pool + JSON.stringify([route.schema, route.method, route.url, route.httpPart]), () => {
      compile ??= defaultValidators(externalSchemas, options);
      return compile(route);
    });
};

const buildSerializer: Factory = (externalSchemas, options) => {
  const pool = JSON.stringify([externalSchemas, options]);
  let compile: Compile | undefined;
  return (route) =>
    remember(
      serializers,
      pool + JSON.stringify([route.schema, route.method, route.url, route.httpStatus, route.contentType]),
      () => {
        compile ??= defaultSerializers(externalSchemas, options);
        return compile(route);
      },
    );
};

/**
 * For buildApp's `schemaController`. Behaviour is Fastify's default but for one detail: with
 * custom compilers Fastify leaves a headers schema's property names as written instead of
 * lower-casing them, and this app's (POST /api/notify's signature headers) are lower-case.
 */
export const SHARED_SCHEMA_COMPILERS = {
  compilersFactory: { buildValidator, buildSerializer },
  // Fastify's own types of these factories are overloads per compiler flavour (Ajv, JTD).
} as unknown as NonNullable<FastifyServerOptions['schemaController']>;
