// Webhook endpoints (SPEC §3, §6): create, read, update, delete, and the one way an endpoint
// is disabled (PATCH, a 410, or 5 days of failures), which emits `webhook_endpoint.disabled`.
// The secret is write-only: responses say `has_secret`, except the one answer that generated
// it (`"secret": "generate"`), which shows it once.
import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../../db/database.ts';
import { forUpdate } from '../../db/locking.ts';
import { transactionWithRetry } from '../../db/transaction.ts';
import { NotFoundError, ValidationError } from '../../http/errors.ts';
import { defineList, type ListParams, type Page } from '../../http/lists.ts';
import { pickFields } from '../../http/schemas.ts';
import type { Clock } from '../../shared/clock.ts';
import { isIdOf, newId } from '../../shared/ids.ts';
import { releaseEventDeliveries } from '../events/events.delivery-state.ts';
import { emitEvent } from '../events/events.service.ts';
import { TOPICS } from '../events/events.topics.ts';
import { generateSecret, STANDARD_SECRET_PREFIX, standardSecretKey } from './webhooks.signing.ts';
import { UnsafeUrlError } from './webhooks.url-safety.ts';
import {
  type CreateEndpointInput,
  ENDPOINT_SORT_FIELDS,
  endpointSchema,
  type UpdateEndpointInput,
  type WebhookEndpoint,
} from './webhooks.schemas.ts';
import type { DisabledReason, EndpointRow, EndpointStatus } from '../../db/tables/webhooks.table.ts';

export type { WebhookEndpoint };

/**
 * The API view of an endpoint row: `events` parsed from its JSON text, the secret becomes
 * `has_secret` (and is never part of the view: webhook data and lists carry this view).
 */
export function toEndpoint(row: EndpointRow): WebhookEndpoint {
  const endpoint = pickFields(endpointSchema, {
    ...row,
    secret: undefined,
    events: JSON.parse(row.events),
    has_secret: row.secret !== null,
  });
  delete endpoint.secret;
  return endpoint;
}

/** The `secret` value that asks the service to make a Standard Webhooks secret. */
export const GENERATE_SECRET = 'generate';

/**
 * The secret to store for a client's `secret` value (SPEC §6), read after trimming
 * surrounding whitespace (a pasted secret's stray space or newline is not part of it):
 * `"generate"` in any letter case → a new `whsec_` secret (generated: true); a value whose
 * prefix is `whsec_` in any letter case must be exactly `whsec_` + the canonical base64 of
 * 24–64 bytes — decision (docs/webhooks.md): a broken Standard Webhooks secret would make
 * every receiver's library reject every delivery, and those libraries strip only a lower-case
 * `whsec_`; any other string is kept as trimmed (signed with its UTF-8 bytes). Throws 400
 * `validation_error` naming `secret` for an empty (all-whitespace) or malformed `whsec_` value.
 */
export function resolveSecret(given: string): { secret: string; generated: boolean } {
  const secret = given.trim();
  if (secret === '') throw new ValidationError('secret must not be empty or only whitespace', 'secret');
  if (secret.toLowerCase() === GENERATE_SECRET) return { secret: generateSecret(), generated: true };
  const prefix = secret.slice(0, STANDARD_SECRET_PREFIX.length);
  if (prefix.toLowerCase() === STANDARD_SECRET_PREFIX && !standardSecretKey(secret)) {
    throw new ValidationError(
      prefix === STANDARD_SECRET_PREFIX
        ? 'secret starting with whsec_ must be whsec_ followed by the base64 of 24 to 64 bytes (or send "generate" to get one)'
        : `secret starting with ${prefix} must start with whsec_ in lower case, followed by the base64 of 24 to 64 bytes (or send "generate" to get one)`,
      'secret',
    );
  }
  return { secret, generated: false };
}

/** The endpoint view, with the secret shown when this request generated it. */
function withGenerated(endpoint: WebhookEndpoint, secret: { secret: string; generated: boolean } | undefined) {
  return secret?.generated ? { ...endpoint, secret: secret.secret } : endpoint;
}

/** Checks a client's url (SPEC §6) and throws UnsafeUrlError; routes pass one bound to the network. */
export type UrlCheck = (url: string) => Promise<unknown>;

async function checkUrl(check: UrlCheck, url: string): Promise<void> {
  try {
    await check(url);
  } catch (error) {
    if (error instanceof UnsafeUrlError) throw new ValidationError(error.message, 'url');
    throw error;
  }
}

const KNOWN_TOPICS: ReadonlySet<string> = new Set(TOPICS);

/**
 * `events` as SPEC §6 wants it: a non-empty array of distinct known topics or `"*"`.
 * Throws 400 naming `events`. Returns the list as given.
 */
export function validateEvents(value: unknown): string[] {
  if (!Array.isArray(value)) throw new ValidationError('events must be an array of topic names', 'events');
  if (value.length === 0) throw new ValidationError('events must not be empty', 'events');
  const seen = new Set<string>();
  for (const item of value) {
    if (typeof item !== 'string') throw new ValidationError('events must contain only topic names', 'events');
    if (item !== '*' && !KNOWN_TOPICS.has(item)) {
      throw new ValidationError(`events has an unknown topic "${item.slice(0, 100)}"`, 'events');
    }
    if (seen.has(item)) throw new ValidationError(`events must not contain duplicates ("${item}")`, 'events');
    seen.add(item);
  }
  return value as string[];
}

/**
 * Creates an enabled endpoint after checking its url (DNS included) and its secret
 * (resolveSecret: `"generate"` makes one, returned in `secret` this once). Throws 400
 * naming the field.
 */
export async function createEndpoint(
  db: Kysely<Database>,
  clock: Clock,
  check: UrlCheck,
  input: CreateEndpointInput,
): Promise<WebhookEndpoint> {
  const events = validateEvents(input.events);
  const secret = input.secret === undefined ? undefined : resolveSecret(input.secret);
  await checkUrl(check, input.url);
  const now = clock.now().toISOString();
  const row: EndpointRow = {
    id: newId('webhookEndpoint'),
    url: input.url,
    events: JSON.stringify(events),
    secret: secret?.secret ?? null,
    status: 'enabled',
    disabled_reason: null,
    failing_since: null,
    created_at: now,
    updated_at: now,
  };
  await db.insertInto('webhook_endpoints').values(row).execute();
  return withGenerated(toEndpoint(row), secret);
}

/** The endpoint row; throws 404 `not_found` for unknown or malformed ids. */
export async function findEndpoint(db: Kysely<Database>, id: string): Promise<EndpointRow> {
  const row = isIdOf('webhookEndpoint', id)
    ? await db.selectFrom('webhook_endpoints').selectAll().where('id', '=', id).executeTakeFirst()
    : undefined;
  if (!row) throw new NotFoundError('webhook endpoint', id);
  return row;
}

/** Reads the endpoint inside `trx`, locking it on PostgreSQL. Throws 404. */
export async function lockEndpoint(trx: Transaction<Database>, id: string): Promise<EndpointRow> {
  const query = trx.selectFrom('webhook_endpoints').selectAll().where('id', '=', id);
  const row = isIdOf('webhookEndpoint', id) ? await forUpdate(query, trx).executeTakeFirst() : undefined;
  if (!row) throw new NotFoundError('webhook endpoint', id);
  return row;
}

/** One endpoint. Throws 404. */
export async function getEndpoint(db: Kysely<Database>, id: string): Promise<WebhookEndpoint> {
  return toEndpoint(await findEndpoint(db, id));
}

/** A page of endpoints; filter `status`. */
export async function listEndpoints(
  db: Kysely<Database>,
  params: ListParams,
  filters: { status?: EndpointStatus },
): Promise<Page<WebhookEndpoint>> {
  return endpointsList.page(db, params, { status: filters.status || undefined });
}

const endpointsList = defineList({
  from: (db) => db.selectFrom('webhook_endpoints'),
  select: (query) => query.selectAll(),
  sortable: ENDPOINT_SORT_FIELDS,
  map: (rows) => rows.map(toEndpoint),
});

/**
 * Disables an enabled endpoint for `reason` and emits `webhook_endpoint.disabled` with it,
 * in the caller's transaction. Does nothing (returns undefined) when it is already disabled,
 * so racing disablers emit one event. Its pending deliveries are parked (no due time) until
 * it is enabled again.
 */
export async function disableEndpoint(
  trx: Transaction<Database>,
  clock: Clock,
  id: string,
  reason: DisabledReason,
): Promise<WebhookEndpoint | undefined> {
  const now = clock.now().toISOString();
  const row = await trx
    .updateTable('webhook_endpoints')
    .set({ status: 'disabled', disabled_reason: reason, updated_at: now })
    .where('id', '=', id)
    .where('status', '=', 'enabled')
    .returningAll()
    .executeTakeFirst();
  if (!row) return undefined;
  await trx
    .updateTable('webhook_deliveries')
    .set({ next_attempt_at: null, updated_at: now })
    .where('endpoint_id', '=', id)
    .where('status', '=', 'pending')
    .execute();
  const endpoint = toEndpoint(row);
  await emitEvent(trx, clock, 'webhook_endpoint.disabled', endpoint);
  return endpoint;
}

/**
 * Applies the given fields. A new url is checked like at creation; `secret: null` removes
 * the secret, `"generate"` rotates to a new `whsec_` secret returned in `secret` this once,
 * a `whsec_` secret is checked as at creation; `status: disabled` disables (emitting
 * `webhook_endpoint.disabled`), `enabled` re-enables and forgets past failures. Throws 404,
 * or 400 naming the field.
 */
export async function updateEndpoint(
  db: Kysely<Database>,
  clock: Clock,
  check: UrlCheck,
  id: string,
  patch: UpdateEndpointInput,
): Promise<WebhookEndpoint> {
  const events = patch.events === undefined ? undefined : validateEvents(patch.events);
  const secret = typeof patch.secret === 'string' ? resolveSecret(patch.secret) : undefined;
  if (patch.url !== undefined) {
    await findEndpoint(db, id); // 404 before a DNS lookup for an endpoint that does not exist
    await checkUrl(check, patch.url);
  }
  return transactionWithRetry(db, async (trx) => {
    const current = await lockEndpoint(trx, id);
    const changes: Partial<EndpointRow> = {};
    if (patch.url !== undefined && patch.url !== current.url) changes.url = patch.url;
    if (events !== undefined && JSON.stringify(events) !== current.events) changes.events = JSON.stringify(events);
    const newSecret = patch.secret === null ? null : secret?.secret;
    if (patch.secret !== undefined && newSecret !== current.secret) changes.secret = newSecret;
    if (patch.status === 'enabled' && current.status === 'disabled') {
      Object.assign(changes, { status: 'enabled', disabled_reason: null, failing_since: null });
    }
    if (Object.keys(changes).length > 0) {
      changes.updated_at = clock.now().toISOString();
      await trx.updateTable('webhook_endpoints').set(changes).where('id', '=', id).execute();
    }
    if (changes.status === 'enabled') {
      // Parked deliveries are due again, at once.
      await trx
        .updateTable('webhook_deliveries')
        .set({ next_attempt_at: changes.updated_at, updated_at: changes.updated_at })
        .where('endpoint_id', '=', id)
        .where('status', '=', 'pending')
        .where('next_attempt_at', 'is', null)
        .execute();
    }
    if (patch.status === 'disabled' && current.status === 'enabled') {
      return withGenerated((await disableEndpoint(trx, clock, id, 'manual')) as WebhookEndpoint, secret);
    }
    return withGenerated(toEndpoint({ ...current, ...changes }), secret);
  });
}

/**
 * Deletes the endpoint with its deliveries and attempts (SPEC §3: pending deliveries are
 * dropped). Events waiting only on those deliveries count as delivered. Throws 404.
 */
export async function deleteEndpoint(db: Kysely<Database>, clock: Clock, id: string): Promise<void> {
  await transactionWithRetry(db, async (trx) => {
    await lockEndpoint(trx, id);
    // Lock the undelivered ones first: a worker recording a success right now either
    // commits before (and the row drops out) or waits, and finds the row gone.
    const undelivered = await forUpdate(
      trx
        .selectFrom('webhook_deliveries')
        .select('event_id')
        .where('endpoint_id', '=', id)
        .where('delivered_at', 'is', null),
      trx,
    ).execute();
    const now = clock.now().toISOString();
    const eventIds = undelivered.map((row) => row.event_id);
    for (let i = 0; i < eventIds.length; i += 500) {
      await releaseEventDeliveries(trx, eventIds.slice(i, i + 500), now);
    }
    await trx.deleteFrom('webhook_endpoints').where('id', '=', id).execute();
  });
}
