// Authentication and scopes (SPEC §2): `Authorization: Bearer <key>` or `x-api-key: <key>`;
// never a key in the query string. Runs on onRequest, before the body is read.
import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction, onRequestHookHandler } from 'fastify';
import type { Kysely } from 'kysely';
import type { Database } from '../../db/database.ts';
import type { Clock } from '../../shared/clock.ts';
import type { KeyUsageRecorder } from './api-keys.usage.ts';
import { hashKey } from './api-keys.keys.ts';
import { authenticateKey, bootstrapPrincipal } from './api-keys.service.ts';
import { AppError, sendError } from '../../http/errors.ts';
import { type Principal, requiredScope, type Scope } from '../../http/route.ts';

const SCOPE_RANK = { read: 1, write: 2, admin: 3 } as const;
const MAX_KEY_LENGTH = 200;

/** The key a request presents, or undefined. Both headers are accepted; Bearer is case-insensitive. */
export function presentedKey(request: FastifyRequest): string | undefined {
  const authorization = request.headers.authorization;
  if (typeof authorization === 'string') {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
    if (match) return match[1];
  }
  const header = request.headers['x-api-key'];
  if (typeof header === 'string' && header.trim() !== '') return header.trim();
  return undefined;
}

/**
 * onRequest hook: answers 401 (exact seed body) without a usable key and 403
 * `permission_error` when the key's scope is too small; sets `request.principal`.
 */
/** What authentication reads: the app's Deps satisfy it. */
export interface AuthDeps {
  config: { apiKeys: readonly string[] };
  db: Kysely<Database>;
  clock: Clock;
  /** SHA-256 hashes of the bootstrap keys from API_KEYS. */
  bootstrapKeyHashes: ReadonlySet<string>;
  keyUsage: KeyUsageRecorder;
}

export function authenticate(deps: AuthDeps): onRequestHookHandler {
  // Bootstrap keys (API_KEYS) are constant for the process: their principals are found by the
  // presented text, without hashing it on every request. Stored keys are looked up every
  // time, so a revoked one is refused at once.
  const bootstrap = new Map<string, Principal>();
  for (const key of deps.config.apiKeys) {
    const keyHash = hashKey(key);
    if (deps.bootstrapKeyHashes.has(keyHash)) bootstrap.set(key, Object.freeze(bootstrapPrincipal(keyHash)));
  }
  /** Sets the principal; answers 401 without one, throws 403 when its scope is too small. */
  const admit = (
    request: FastifyRequest,
    reply: FastifyReply,
    scope: Exclude<Scope, 'public'>,
    principal: Principal | undefined,
  ) => {
    if (!principal) {
      sendError(reply, new AppError('authentication_error', 'unauthorized'));
      return false;
    }
    // Set before the scope check: a 403 still counts against the key's rate limit.
    request.principal = principal;
    if (SCOPE_RANK[principal.scope] < SCOPE_RANK[scope]) {
      throw new AppError(
        'permission_error',
        `this API key has the ${principal.scope} scope; this request needs ${scope}`,
      );
    }
    if (principal.id.startsWith('key_')) deps.keyUsage.record(principal.id, deps.clock.now().toISOString());
    return true;
  };
  // A callback hook: a public route or a bootstrap key never waits; a stored key waits for
  // its lookup. After a 401 the reply is sent and `done` is not called (Fastify's rule).
  return function authenticateRequest(request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) {
    const scope = requiredScope(request);
    if (scope === 'public') return done();
    const key = presentedKey(request);
    const usable = key !== undefined && key.length <= MAX_KEY_LENGTH;
    const known = usable ? bootstrap.get(key) : undefined;
    if (known !== undefined || !usable) {
      try {
        if (admit(request, reply, scope, known)) done();
      } catch (error) {
        done(error as Error);
      }
      return;
    }
    authenticateKey(deps.db, deps.clock, deps.bootstrapKeyHashes, key)
      .then((principal) => {
        if (admit(request, reply, scope, principal)) done();
      })
      .catch((error: unknown) => done(error as Error));
  };
}
