// A route is a schema plus a few lines (ARCHITECTURE "Style" 3). `defineRoute` keeps the
// handler's request types while letting app.ts hold every route in one plain list; with the
// TypeBox type provider they come from the route's own TypeBox schemas.
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type {
  ContextConfigDefault,
  FastifyRequest,
  FastifySchema,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
  RouteGenericInterface,
  RouteOptions,
} from 'fastify';

/** Who may call a route: nobody-in-particular, or an API key with at least this scope. */
export type Scope = 'public' | 'read' | 'write' | 'admin';

/** The caller behind a request's API key. */
export interface Principal {
  /** `key_…` for stored keys, `bootstrap_<hash prefix>` for keys from API_KEYS. */
  id: string;
  scope: Exclude<Scope, 'public'>;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Required scope; omitted means `read` for GET and `write` otherwise. */
    scope?: Scope;
    /**
     * `false` on routes whose response carries a secret shown once (a new API key): their
     * responses are never stored, so `Idempotency-Key` is ignored there (modules/idempotency/idempotency.hooks.ts).
     */
    idempotency?: false;
  }
  interface FastifyRequest {
    principal: Principal | undefined;
  }
}

export type Route = RouteOptions;

/**
 * Declares one route; returns it untyped for the list. The handler's `Body`/`Querystring`/
 * `Params` are inferred from TypeBox schemas (`schema.body: createCustomerBody`), or given
 * as `defineRoute<{ Querystring: … }>` where the schema is plain JSON Schema.
 */
export function defineRoute<
  G extends RouteGenericInterface = RouteGenericInterface,
  S extends FastifySchema = FastifySchema,
>(
  options: RouteOptions<
    RawServerDefault,
    RawRequestDefaultExpression,
    RawReplyDefaultExpression,
    G,
    ContextConfigDefault,
    S,
    TypeBoxTypeProvider
  >,
): Route {
  return options as unknown as Route;
}

/** A route option's hooks as an array (absent, one function, or a list): for onRoute hooks adding their own. */
export function hookList<T>(hooks: T | T[] | undefined): T[] {
  return hooks === undefined ? [] : Array.isArray(hooks) ? hooks : [hooks];
}

/** The scope a route requires: its `config.scope`, else read for GET/HEAD and write otherwise. */
export function requiredScope(request: FastifyRequest): Scope {
  const configured = request.routeOptions.config.scope;
  if (configured) return configured;
  return request.method === 'GET' || request.method === 'HEAD' ? 'read' : 'write';
}

/**
 * `plugin` with the name Fastify shows for it (its plugin tree, its errors), as Fastify's
 * `Symbol.for('fastify.display-name')` (Fastify's Server reference, "Plugins"). Without one,
 * Fastify looks an unnamed plugin up among the exports of every loaded module at each
 * registration: ≈ 0.5 ms of CPU a plugin, paid by every app built (the tests build hundreds).
 */
export function namedPlugin<T extends object>(name: string, plugin: T): T {
  return Object.assign(plugin, { [Symbol.for('fastify.display-name')]: name });
}
