// The database side of sending webhooks: claim due deliveries under a lease in one short
// transaction, and later record what each attempt came to in another. The send itself happens
// between the two, outside any transaction, because its effect (the receiver's) is outside
// the database. A crashed worker's leases run out and its deliveries become due again
// (at-least-once, SPEC §6–7).
import { type Kysely, sql, type Transaction } from 'kysely';
import type { Config } from '../../config.ts';
import { isPostgres } from '../../db/column-types.ts';
import type { Database } from '../../db/database.ts';
import { claimRows, forUpdate } from '../../db/locking.ts';
import { earliest } from '../../db/scope.ts';
import type { Clock } from '../../shared/clock.ts';
import type { AttemptResponse } from './webhooks.delivery-client.ts';
import { releaseEventDeliveries } from '../events/events.delivery-state.ts';
import { disableEndpoint } from './webhooks.endpoints.ts';
import { nextRetryDelay, parseRetryAfter } from './webhooks.retry-schedule.ts';

/** SPEC §4: an endpoint whose every attempt failed for this long is disabled. */
export const FAILING_DISABLE_AFTER_MS = 5 * 24 * 3_600_000;

/** A delivery this worker holds the lease of, with what it needs to send it. */
export interface ClaimedDelivery {
  id: string;
  endpointId: string;
  eventId: string;
  topic: string;
  url: string;
  secret: string | null;
  /** The event's `data` JSON, exactly as stored. */
  data: string;
}

/**
 * The earliest instant strictly after `after` at which a pending delivery may come due
 * without another write — its next attempt's time, or another worker's lease on it running
 * out — or null (SPEC §7: the dispatcher's idle sleep). A superset: a delivery of a disabled
 * endpoint counts too (an early wake-up costs one pass).
 */
export async function nextDeliveryDueAt(db: Kysely<Database>, after: Date): Promise<Date | null> {
  const at = after.toISOString();
  const [attempt, lease] = await Promise.all([
    db
      .selectFrom('webhook_deliveries')
      .select((eb) => eb.fn.min('next_attempt_at').as('due'))
      .where('status', '=', sql.lit('pending'))
      .where('next_attempt_at', '>', at)
      .executeTakeFirst(),
    db
      .selectFrom('webhook_deliveries')
      .select((eb) => eb.fn.min('locked_until').as('due'))
      .where('status', '=', sql.lit('pending'))
      .where('locked_until', '>', at)
      .executeTakeFirst(),
  ]);
  return earliest([attempt?.due, lease?.due]);
}

export interface ClaimOptions {
  /** Most deliveries to claim. */
  limit: number;
  /** Endpoints this worker has no free slot for (skipped in the query). */
  fullEndpoints: readonly string[];
  /** Free slots per endpoint (endpoints not listed have `defaultRoom`). */
  room: ReadonlyMap<string, number>;
  defaultRoom: number;
  /** This worker's id, written to `locked_by`. */
  owner: string;
  leaseMs: number;
}

/**
 * Claims due deliveries of enabled endpoints, oldest due first, at most `room` per endpoint:
 * SKIP LOCKED on PostgreSQL, then the lease is written, in one transaction. Returns them
 * with their endpoint's current url and secret and the event's data.
 */
export async function claimDueDeliveries(
  db: Kysely<Database>,
  clock: Clock,
  options: ClaimOptions,
): Promise<ClaimedDelivery[]> {
  if (options.limit <= 0) return [];
  const now = clock.now().toISOString();
  const dueQuery = (db: Kysely<Database>) => {
    let query = db
      .selectFrom('webhook_deliveries')
      .select(['id', 'endpoint_id'])
      // A literal, not a parameter: SQLite uses the partial index `status = 'pending'` only then.
      .where('status', '=', sql.lit('pending'))
      .where('next_attempt_at', '<=', now)
      .where((eb) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<=', now)]))
      // Parked deliveries of disabled endpoints are not due; this catches the few in flight
      // when it was disabled. (NOT IN, so SQLite keeps walking the due index in order.)
      .where('endpoint_id', 'not in', (eb) =>
        eb.selectFrom('webhook_endpoints').select('id').where('status', '=', 'disabled'),
      );
    if (options.fullEndpoints.length > 0) query = query.where('endpoint_id', 'not in', options.fullEndpoints);
    return query.orderBy('next_attempt_at');
  };
  // Most passes find nothing due: look first, without a transaction (one statement instead of
  // a transaction's two on PostgreSQL, no write lock on SQLite).
  if ((await dueQuery(db).limit(1).execute()).length === 0) return [];
  return db.transaction().execute(async (trx) => {
    const due = await claimRows(dueQuery(trx).limit(options.limit), trx).execute();

    const taken = new Map<string, number>();
    const chosen: string[] = [];
    for (const row of due) {
      const used = taken.get(row.endpoint_id) ?? 0;
      if (used >= (options.room.get(row.endpoint_id) ?? options.defaultRoom)) continue;
      taken.set(row.endpoint_id, used + 1);
      chosen.push(row.id);
    }
    if (chosen.length === 0) return [];

    const lockedUntil = new Date(clock.now().getTime() + options.leaseMs).toISOString();
    await trx
      .updateTable('webhook_deliveries')
      .set({ locked_until: lockedUntil, locked_by: options.owner })
      .where('id', 'in', chosen)
      .execute();
    const rows = await trx
      .selectFrom('webhook_deliveries as d')
      .innerJoin('webhook_endpoints as e', 'e.id', 'd.endpoint_id')
      .innerJoin('events as ev', 'ev.id', 'd.event_id')
      .select(['d.id', 'd.endpoint_id', 'd.event_id', 'd.topic', 'e.url', 'e.secret', 'ev.data'])
      .where('d.id', 'in', chosen)
      .execute();
    return rows.map((row) => ({
      id: row.id,
      endpointId: row.endpoint_id,
      eventId: row.event_id,
      topic: row.topic,
      url: row.url,
      secret: row.secret,
      data: row.data,
    }));
  });
}

/** What became of one claimed delivery. */
export type Outcome =
  | { kind: 'attempt'; delivery: ClaimedDelivery; owner: string; attemptedAt: Date; response: AttemptResponse }
  /** Not sent (shutdown abort): the lease is given back, no attempt is recorded. */
  | { kind: 'release'; delivery: ClaimedDelivery; owner: string };

export interface RecordSettings {
  config: Pick<Config, 'webhookRetryScheduleMs'>;
  /** Jitter source, [0, 1). */
  random: () => number;
}

/**
 * Records outcomes, all in one transaction (one commit for many attempts). Per attempt:
 * the attempt row; the delivery's status (2xx → succeeded; 410 → failed and the endpoint
 * disabled; else pending at the next retry, or failed when the schedule is used up); the
 * event delivered when its last pending delivery first succeeds; the endpoint's failure
 * streak, disabling it after 5 days of nothing but failures. The batch's endpoints are locked
 * first (lock order: db/locking.ts). A delivery whose lease another
 * worker took meanwhile gets its attempt recorded but its state left to that worker; one
 * deleted meanwhile is skipped.
 */
export async function recordOutcomes(
  db: Kysely<Database>,
  clock: Clock,
  settings: RecordSettings,
  outcomes: readonly Outcome[],
): Promise<void> {
  if (outcomes.length === 0) return;
  // The service's lock order (db/locking.ts): endpoints before deliveries before events. The
  // batch's endpoints are locked first, in id order, as the API locks an endpoint before its
  // deliveries; then event rows (locked to count their deliveries down) in event id order, so
  // two workers recording at once queue instead of deadlocking.
  const endpointIds = [...new Set(outcomes.map((outcome) => outcome.delivery.endpointId))].sort();
  const key = (outcome: Outcome) => `${outcome.delivery.eventId} ${outcome.delivery.id}`;
  const ordered = [...outcomes].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
  await db.transaction().execute(async (trx) => {
    // Only PostgreSQL has row locks to take; SQLite's one writer needs no read for them.
    if (isPostgres(trx)) {
      await forUpdate(
        trx.selectFrom('webhook_endpoints').select('id').where('id', 'in', endpointIds).orderBy('id'),
        trx,
      ).execute();
    }
    for (const outcome of ordered) {
      if (outcome.kind === 'release') {
        await trx
          .updateTable('webhook_deliveries')
          .set({ locked_until: null, locked_by: null })
          .where('id', '=', outcome.delivery.id)
          .where('locked_by', '=', outcome.owner)
          .execute();
      } else {
        await recordAttempt(trx, clock, settings, outcome);
      }
    }
  });
}

async function recordAttempt(
  trx: Transaction<Database>,
  clock: Clock,
  settings: RecordSettings,
  outcome: Extract<Outcome, { kind: 'attempt' }>,
): Promise<void> {
  const { delivery, response } = outcome;
  const row = await forUpdate(
    trx
      .selectFrom('webhook_deliveries')
      .select(['attempt_count', 'locked_by', 'delivered_at'])
      .where('id', '=', delivery.id),
    trx,
  ).executeTakeFirst();
  if (!row) return; // the endpoint was deleted meanwhile
  const number = row.attempt_count + 1;
  const now = clock.now();
  const nowIso = now.toISOString();
  const attemptedAt = outcome.attemptedAt.toISOString();
  await trx
    .insertInto('webhook_attempts')
    .values({
      delivery_id: delivery.id,
      number,
      attempted_at: attemptedAt,
      duration_ms: response.durationMs,
      status_code: response.statusCode,
      response_body: response.body,
      error: response.error,
    })
    .execute();

  const status = response.statusCode;
  const succeeded = status !== null && status >= 200 && status < 300;
  const gone = status === 410;
  const owned = row.locked_by === outcome.owner;
  const common = { attempt_count: number, last_attempt_at: attemptedAt, updated_at: nowIso };

  if (succeeded) {
    await trx
      .updateTable('webhook_deliveries')
      .set({
        ...common,
        delivered_at: row.delivered_at ?? nowIso,
        ...(owned ? { status: 'succeeded', next_attempt_at: null, locked_until: null, locked_by: null } : {}),
      })
      .where('id', '=', delivery.id)
      .execute();
    if (row.delivered_at === null) await releaseEventDeliveries(trx, [delivery.eventId], nowIso);
    await trx
      .updateTable('webhook_endpoints')
      .set({ failing_since: null })
      .where('id', '=', delivery.endpointId)
      .where('failing_since', 'is not', null)
      .execute();
    return;
  }

  const endpoint = await trx
    .updateTable('webhook_endpoints')
    .set((eb) => ({ failing_since: eb.fn.coalesce('failing_since', eb.val(attemptedAt)) }))
    .where('id', '=', delivery.endpointId)
    .returning(['failing_since', 'status'])
    .executeTakeFirst();
  const failingSince = endpoint?.failing_since ?? null;
  const failingTooLong = failingSince !== null && now.getTime() - Date.parse(failingSince) >= FAILING_DISABLE_AFTER_MS;
  const retryAfterMs = parseRetryAfter(response.retryAfter, now);
  const schedule = settings.config.webhookRetryScheduleMs;
  const delay = gone ? undefined : nextRetryDelay(number, schedule, retryAfterMs, settings.random);
  // A retry of a disabled endpoint is parked (no due time) until it is enabled again.
  const parked = endpoint?.status !== 'enabled';
  await trx
    .updateTable('webhook_deliveries')
    .set({
      ...common,
      ...(owned
        ? {
            status: delay === undefined ? 'failed' : 'pending',
            next_attempt_at: delay === undefined || parked ? null : new Date(now.getTime() + delay).toISOString(),
            locked_until: null,
            locked_by: null,
          }
        : {}),
    })
    .where('id', '=', delivery.id)
    .execute();
  if (gone) await disableEndpoint(trx, clock, delivery.endpointId, 'gone');
  else if (failingTooLong) await disableEndpoint(trx, clock, delivery.endpointId, 'failing');
}
