// Response serializers: Fastify's own compiler (fast-json-stringify), given for each route only
// the named schemas that route's schema reaches through `$ref`. Fastify hands the compiler
// every schema the app added (≈ 100 named schemas, ≈ 70 KB of JSON), and fast-json-stringify
// re-validates and re-indexes all of them for each of the ≈ 260 serializers it builds at
// start-up: ≈ 1 s of CPU per app, most of an app's start. The serializers are the same; a
// `$ref` to a schema missing from the pool still fails the build, at start-up, as before.
import { createRequire } from 'node:module';
import type { FastifyServerOptions } from 'fastify';

/** The part of a route Fastify gives a serializer compiler (one per response status). */
interface SerializerRoute {
  schema: unknown;
  method: string;
  url: string;
  httpStatus?: string;
}
/** A compiled serializer: the JSON text of a response body. */
type Serializer = (data: unknown) => string;
/** Named schemas by their `$id`, as Fastify passes the ones added with `app.addSchema`. */
type SchemaPool = Record<string, unknown>;
type SerializerFactory = (pool: SchemaPool | undefined, options: unknown) => (route: SerializerRoute) => Serializer;

// Fastify's default serializer compiler (what it builds when none is given).
const require = createRequire(import.meta.url);
const defaultSerializers = (require('@fastify/fast-json-stringify-compiler') as () => SerializerFactory)();

/** Every `$ref` in `schema`, at any depth. */
function collectRefs(schema: unknown, refs: Set<string>): void {
  if (Array.isArray(schema)) {
    for (const item of schema) collectRefs(item, refs);
  } else if (schema !== null && typeof schema === 'object') {
    for (const [key, value] of Object.entries(schema)) {
      if (key === '$ref' && typeof value === 'string') refs.add(value);
      else collectRefs(value, refs);
    }
  }
}

/**
 * The named schemas of `pool` that `schema` reaches by `$ref` (`Customer#`,
 * `Customer#/properties/id`), directly or through one another. A reference to no schema of
 * the pool (a local `#/…` pointer, or a name nobody added) reaches nothing here; the
 * compiler resolves or rejects it as before.
 */
export function reachableSchemas(schema: unknown, pool: SchemaPool): SchemaPool {
  const reached: SchemaPool = {};
  const pending = [schema];
  while (pending.length > 0) {
    const refs = new Set<string>();
    collectRefs(pending.pop(), refs);
    for (const ref of refs) {
      const id = ref.slice(0, ref.includes('#') ? ref.indexOf('#') : undefined);
      if (id === '' || id in reached || !Object.hasOwn(pool, id)) continue;
      reached[id] = pool[id];
      pending.push(pool[id]);
    }
  }
  return reached;
}

/**
 * Fastify's serializer compiler factory (`compilersFactory.buildSerializer`) with each
 * route's pool cut to the schemas its response schema reaches. Same options, same output.
 */
export function buildSerializer(
  pool: SchemaPool | undefined,
  options: unknown,
): (route: SerializerRoute) => Serializer {
  if (pool === undefined) return defaultSerializers(pool, options);
  return (route) => defaultSerializers(reachableSchemas(route.schema, pool), options)(route);
}

/** buildApp's default `schemaController`: Fastify's validators, these serializers. */
export const SCHEMA_CONTROLLER = {
  compilersFactory: { buildSerializer },
  // Fastify's types of the factory are overloads per compiler flavour.
} as unknown as NonNullable<FastifyServerOptions['schemaController']>;
