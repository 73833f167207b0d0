// Conditional GETs and the response cache (docs/SPEC.md "Caching and ETag").
//
// Every read-only GET under /api that needs an API key (not /api/health, /openapi.json,
// /docs) answers with a strong `ETag` (a hash of the body bytes) and `Cache-Control:
// private, no-cache`, and `If-None-Match` (RFC 9110 §13.1.2: `*`, lists, weak comparison)
// turns a 200 into a 304 without a body.
//
// The cache keeps the serialized 200 bodies of those routes in memory, keyed by the request
// (who asks, and the path and query as sent) and stored with the
// database's commit version read BEFORE the handler read the data (db/commit-version.ts).
// A request is served from the cache only when the version it reads now equals the entry's:
// nothing was written since the entry's data was read, so the entry is what the handler
// would answer. Only the body is kept; the request id, rate-limit and security headers are
// set by their own hooks on every response, hit or not. The cache is looked up after
// authentication, scopes and rate limits (a preParsing hook), so all of them still see every
// request; validation and the text guard gave the same request target a 200 when the entry
// was stored and would again (they read nothing but the target). A response whose handler read the clock is computed from "now"
// (dunning's past-due and upcoming lists) and is not stored (shared/clock-reads.ts). Memory
// is bounded (bytes, least recently used out first).
import { hash } from 'node:crypto';
import type {
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  onSendHookHandler,
  preParsingHookHandler,
  RouteOptions,
} from 'fastify';
import type { CommitVersionSource } from '../db/commit-version.ts';
import { type ClockReads, watchClockReads } from '../shared/clock-reads.ts';
import { hookList } from './route.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Set by the response cache on the routes it serves (GET/HEAD under /api, not public). */
    conditionalGet?: boolean;
  }
  interface FastifyRequest {
    /** The response cache's state for this request (response-cache.ts). */
    responseCache: Hit | Miss | undefined;
  }
}

/** One stored response body. */
interface Entry {
  version: string;
  /** The UTF-8 bytes, ready to write: a string would be encoded again on every hit. */
  body: Buffer;
  etag: string;
  contentType: string;
  /** Approximate bytes the entry holds (the body's bytes, its strings as UTF-16, a fixed overhead). */
  size: number;
}

/** The state of a request answered from the cache (its headers are set when it is served). */
const HIT = Object.freeze({ hit: true as const });
type Hit = typeof HIT;

interface Miss extends ClockReads {
  hit: false;
  key: string;
  version: string;
}

/** Bytes counted for an entry on top of its strings: the Map slot and the object. */
const ENTRY_OVERHEAD_BYTES = 128;
/** A body larger than this share of the budget is not stored (it would evict too much). */
const LARGEST_SHARE = 8;

/** An entry in the store, with its "read since last passed over" mark. */
interface Slot {
  entry: Entry;
  used: boolean;
}

/**
 * Map of entries bounded by their total `size` in bytes, least recently used out first, by
 * the second-chance (CLOCK) rule: a read only marks its entry, and eviction walks from the
 * oldest insertion, moving a marked entry to the back (unmarked) and removing the first
 * unmarked one. A read never reorders the Map (a delete and a set per cache hit cost more
 * than the rest of the lookup); what goes first is still an entry not read since the
 * eviction walk last passed it.
 */
export class LruStore {
  readonly #maxBytes: number;
  readonly #slots = new Map<string, Slot>();
  #bytes = 0;

  /** `maxBytes`: the budget (≥ 1). */
  constructor(maxBytes: number) {
    this.#maxBytes = maxBytes;
  }

  /** Bytes held now (approximate, see Entry.size). */
  get bytes(): number {
    return this.#bytes;
  }

  get size(): number {
    return this.#slots.size;
  }

  /** The entry under `key`, now marked as used; undefined when absent. */
  get(key: string): Entry | undefined {
    const slot = this.#slots.get(key);
    if (slot === undefined) return undefined;
    slot.used = true;
    return slot.entry;
  }

  /** Stores `entry` under `key` (replacing one), then evicts past the budget (see the class comment). */
  set(key: string, entry: Entry): void {
    if (entry.size > this.#maxBytes / LARGEST_SHARE) return;
    this.delete(key);
    this.#slots.set(key, { entry, used: false });
    this.#bytes += entry.size;
    while (this.#bytes > this.#maxBytes) {
      const [oldest, slot] = this.#slots.entries().next().value!;
      this.#slots.delete(oldest);
      if (slot.used && oldest !== key) {
        slot.used = false;
        this.#slots.set(oldest, slot);
      } else {
        this.#bytes -= slot.entry.size;
      }
    }
  }

  delete(key: string): void {
    const slot = this.#slots.get(key);
    if (!slot) return;
    this.#slots.delete(key);
    this.#bytes -= slot.entry.size;
  }
}

/** A strong entity tag for `body`: the quoted base64url SHA-256 of its bytes (UTF-8 for text), cut to 128 bits. */
export function etagOf(body: string | Buffer): string {
  return `"${hash('sha256', body, 'base64url').slice(0, 22)}"`;
}

/** `W/"x"` or `"x"` with optional whitespace, then a comma or the end (RFC 9110 §8.8.3, §5.6.1). */
const ENTITY_TAG = /[ \t]*(W\/)?("[\x21\x23-\x7e\x80-\xff]*")[ \t]*(?:,|$)/y;

/**
 * True when an `If-None-Match` field value matches `etag` (RFC 9110 §13.1.2): `*` matches
 * any current representation; otherwise any listed tag matches by the weak comparison
 * (`W/"x"` matches `"x"`). A field that does not parse as `*` or a list of entity tags
 * matches nothing: the condition is ignored (§13.1: a server MAY ignore an invalid one)
 * and the full response is sent.
 */
export function ifNoneMatchMatches(field: string, etag: string): boolean {
  const value = field.trim();
  if (value === '*') return true;
  const opaque = etag.startsWith('W/') ? etag.slice(2) : etag;
  let matched = false;
  ENTITY_TAG.lastIndex = 0;
  let position = 0;
  // Empty list elements (", ,") are allowed by the list syntax (RFC 9110 §5.6.1.2).
  while (position < value.length) {
    if (value[position] === ',' || value[position] === ' ' || value[position] === '\t') {
      position += 1;
      continue;
    }
    ENTITY_TAG.lastIndex = position;
    const match = ENTITY_TAG.exec(value);
    if (!match) return false;
    if (match[2] === opaque) matched = true;
    position = ENTITY_TAG.lastIndex;
  }
  return matched;
}

/** Lookups over which the hit rate is judged. */
const HIT_RATE_WINDOW = 256;
/** Below this share of hits, the version is read for one request in PROBE_EVERY only. */
const MIN_HIT_SHARE = 0.2;
const PROBE_EVERY = 16;

/**
 * Decides whether a request looks the cache up at all. Reading the commit version costs a
 * round trip on PostgreSQL (≈ 45 µs of CPU, bench/response-cache.ts), and where something
 * commits between most reads (a busy cluster: pg_current_snapshot() is cluster-wide) nearly
 * every lookup misses. Over each window of HIT_RATE_WINDOW lookups, a hit share under
 * MIN_HIT_SHARE switches to probing: one request in PROBE_EVERY looks up and stores, the
 * others go straight to the handler (always correct: they read the database), until a
 * window of probes hits often enough again.
 */
export class HitRateGuard {
  #lookups = 0;
  #hits = 0;
  #probing = false;
  #skipped = 0;

  /** True when this request should read the version and look the cache up. */
  shouldLookUp(): boolean {
    if (!this.#probing) return true;
    this.#skipped = (this.#skipped + 1) % PROBE_EVERY;
    return this.#skipped === 0;
  }

  /** Records one lookup's outcome. */
  record(hit: boolean): void {
    this.#lookups += 1;
    if (hit) this.#hits += 1;
    if (this.#lookups < HIT_RATE_WINDOW) return;
    this.#probing = this.#hits < this.#lookups * MIN_HIT_SHARE;
    this.#lookups = 0;
    this.#hits = 0;
  }

  /** True while only probes look up. */
  get probing(): boolean {
    return this.#probing;
  }
}

export interface ResponseCacheOptions {
  /** The commit version source (DatabaseHandle.commitVersion). */
  version: CommitVersionSource;
  /**
   * Memory budget in bytes; 0 stores nothing (ETag and 304 still apply). The routes' clock
   * must note its reads (shared/clock-reads.ts), or responses computed from "now" are kept.
   */
  maxBytes: number;
}

/** `If-None-Match` as documented on every route with conditional GETs. */
const IF_NONE_MATCH_HEADER = {
  type: 'object',
  properties: {
    'if-none-match': {
      type: 'string',
      description:
        'The `ETag` of a response you keep (or a list, or `*`): while the data is unchanged the answer is ' +
        '304 without a body (RFC 9110 §13.1.2; `W/"…"` matches too).',
    },
  },
};

const NOT_MODIFIED = {
  description:
    'Not Modified: `If-None-Match` matched the current `ETag` (a hash of the body). No body; the same ' +
    '`ETag`, `Cache-Control: private, no-cache`, request id and rate-limit headers as the 200.',
  type: 'null',
};

/**
 * The OpenAPI view of a route with conditional GETs (see `servesConditionalGet`): its 304
 * and the If-None-Match header. Other routes' schemas come back unchanged. For the one place
 * that documents the plumbing (openapi.ts); never used to validate.
 */
export function documentConditionalGet(schema: Record<string, unknown>, route: RouteOptions): Record<string, unknown> {
  if (!servesConditionalGet(route.method, route.url, route.config?.scope)) return schema;
  const response = (schema.response ?? {}) as Record<string, unknown>;
  return { ...schema, response: { ...response, 304: NOT_MODIFIED }, headers: schema.headers ?? IF_NONE_MATCH_HEADER };
}

/** True for the routes conditional GETs and the cache apply to. */
function servesConditionalGet(method: string | string[], url: string, scope: string | undefined): boolean {
  const methods = Array.isArray(method) ? method : [method];
  const reads = methods.every((m) => m === 'GET' || m === 'HEAD');
  return reads && url.startsWith('/api/') && scope !== 'public';
}

/**
 * Everything a cacheable response depends on besides the database: the principal (no
 * response depends on which key asks today; keyed anyway, so one never could leak) and the
 * request target as sent (path and query). The target determines the route, its path
 * parameters and its query exactly, so two requests with one key ask the same question; two
 * spellings of one question (`?a=1&b=2`, `?b=2&a=1`) are two entries, each correct. Reading
 * it costs nothing: the parsed query and parameters are not needed before validation.
 */
function keyOf(request: FastifyRequest): string {
  const principal = request.principal;
  return principal === undefined ? request.url : `${principal.id}\n${request.url}`;
}

function sizeOf(key: string, body: Buffer, etag: string, contentType: string, version: string): number {
  return body.byteLength + 2 * (key.length + etag.length + contentType.length + version.length) + ENTRY_OVERHEAD_BYTES;
}

/** The caching headers of every response of a route with conditional GETs. */
const CACHE_CONTROL = 'private, no-cache';

/**
 * Registers conditional GETs and (when `maxBytes` > 0) the response cache on `api`, the
 * scope holding the API routes; call before adding them. See the file comment. The hooks
 * are route-level, added to the routes with conditional GETs only: other routes run none.
 */
export function registerResponseCache(api: FastifyInstance, options: ResponseCacheOptions): void {
  const store = options.maxBytes > 0 ? new LruStore(options.maxBytes) : undefined;
  const { version } = options;
  api.decorateRequest('responseCache', undefined);

  /** Answers from `entry`: its body and content type, or a 304 when If-None-Match matches. */
  const serve = (request: FastifyRequest, reply: FastifyReply, entry: Entry): void => {
    request.responseCache = HIT;
    reply.header('cache-control', CACHE_CONTROL);
    reply.header('etag', entry.etag);
    const condition = request.headers['if-none-match'];
    if (condition !== undefined && request.method === 'GET' && ifNoneMatchMatches(condition, entry.etag)) {
      reply.code(304).send();
      return;
    }
    reply.header('content-type', entry.contentType);
    reply.send(entry.body);
  };

  // Serve from the cache when the commit version still matches, else run the rest of the
  // request (validation, handler and all they await) watched, so that a clock read marks the
  // response as computed from "now", not to be kept. A preParsing hook, after authentication,
  // scopes and rate limits (root and scope hooks run first): a hit skips only what a stored
  // answer makes moot (the text guard, validation and the handler gave this same request
  // target a 200 before: they depend on nothing else). One callback hook, not an async one:
  // on SQLite the version is read synchronously, and the rest must start inside the watch.
  const lookUp = (
    guard: HitRateGuard,
    request: FastifyRequest,
    reply: FastifyReply,
    current: string,
    done: () => void,
  ): void => {
    const key = keyOf(request);
    const entry = store!.get(key);
    if (entry !== undefined && entry.version === current) {
      guard.record(true);
      serve(request, reply, entry);
      return;
    }
    guard.record(false);
    const state: Miss = { hit: false, key, version: current, clockRead: false };
    request.responseCache = state;
    watchClockReads(state, done);
  };
  // One hit-rate guard per route: a route whose lookups nearly all miss (gets of many
  // different ids) must not turn lookups off for a list that hits.
  const lookUpHook = (): preParsingHookHandler => {
    const guard = new HitRateGuard();
    return (request, reply, _payload, done) => {
      if (!guard.shouldLookUp()) return done();
      let read: string | Promise<string>;
      try {
        read = version();
      } catch {
        return done(); // the handler meets the same database and answers its own error
      }
      if (typeof read === 'string') return lookUp(guard, request, reply, read, done as () => void);
      read.then(
        (current) => lookUp(guard, request, reply, current, done as () => void),
        () => done(),
      );
    };
  };

  // Every 200 of these routes gets its ETag; a miss is stored; a matching If-None-Match
  // becomes a 304 with the same headers and no body (RFC 9110 §15.4.5). A hit set its
  // headers when it was served. A callback hook: it runs on every response and never waits.
  const onSend: onSendHookHandler = (request, reply, payload, done) => {
    done(null, conditionalResponse(request, reply, payload));
  };
  const conditionalResponse = (request: FastifyRequest, reply: FastifyReply, payload: unknown): unknown => {
    const state = request.responseCache;
    if (state?.hit) return payload;
    reply.header('cache-control', CACHE_CONTROL);
    if (reply.statusCode !== 200 || (typeof payload !== 'string' && !Buffer.isBuffer(payload))) return payload;
    const etag = etagOf(payload);
    // Bytes (a PDF) get their ETag but are not stored: a hit gives back the body and its type
    // only, not the headers a file carries (Content-Disposition).
    if (typeof payload === 'string' && state && store && !state.clockRead) {
      const contentType = String(reply.getHeader('content-type') ?? 'application/json; charset=utf-8');
      const body = Buffer.from(payload, 'utf8');
      store.set(state.key, {
        version: state.version,
        body,
        etag,
        contentType,
        size: sizeOf(state.key, body, etag, contentType, state.version),
      });
    }
    reply.header('etag', etag);
    const condition = request.headers['if-none-match'];
    // HEAD keeps its 200: Fastify's HEAD handler, which runs after this hook, needs a body to measure.
    if (condition !== undefined && request.method === 'GET' && ifNoneMatchMatches(condition, etag)) {
      reply.code(304);
      reply.removeHeader('content-type');
      return null;
    }
    return payload;
  };

  api.addHook('onRoute', (route) => {
    if (!servesConditionalGet(route.method, route.url ?? '', route.config?.scope)) return;
    route.config = { ...route.config, conditionalGet: true } as typeof route.config;
    // First among the route's own hooks, as scope hooks would run: before Fastify's HEAD
    // handler, which drops the body this hook hashes.
    if (store) route.preParsing = [lookUpHook(), ...hookList(route.preParsing)] as typeof route.preParsing;
    route.onSend = [onSend, ...hookList(route.onSend)] as typeof route.onSend;
  });
}
