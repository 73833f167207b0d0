// Reading the inbox for operators (GET /api/provider-events[/{id}]): the list,
// and one event with its payload and the payment/refunds it reports on. Read-only: the inbox
// is written by inbox.ts and processing (inbox.processing.ts).
//
// The links are derived when read, not stored: the event's own reading
// (readProviderEvent, the code processing runs) names the payment reference and refund
// references, and those resolve to rows the way processing resolves them — a reference that
// is an alias (payment_references) to the payment keyed by its canonical one. So a link
// follows a merge to the surviving payment, needs no write on the money path, and holds for
// events stored before this existed.
import type { Kysely } from 'kysely';
import type { Database } from '../db/database.ts';
import { NotFoundError } from '../http/errors.ts';
import { defineList, type ListParams, type Page } from '../http/lists.ts';
import { pickFields } from '../http/schemas.ts';
import { isIdOf } from '../shared/ids.ts';
import type { ProviderEvent } from '../providers/provider.ts';
import type { InboxStatus, ProviderEventRow } from '../db/tables/provider-events.table.ts';
import {
  PROVIDER_EVENT_SORT_FIELDS,
  type ProviderEventDetail,
  providerEventDetailSchema,
  providerEventSchema,
  type ProviderEventView,
} from './inbox.schemas.ts';
import { readProviderEvent, redactedPayload } from '../providers/registry.ts';

export type { ProviderEventDetail, ProviderEventView };

/** GET /api/provider-events filters; each an exact match, undefined = not filtered. */
export interface ProviderEventFilters {
  provider?: string;
  status?: InboxStatus;
  /** The provider's event type (`charge.success`). */
  type?: string;
  /** The provider's event key (Stripe `evt_…`). */
  event_key?: string;
}

/** Every column but the payload: what a list shows. */
const LIST_COLUMNS = [
  'id',
  'provider',
  'event_key',
  'event_type',
  'status',
  'error',
  'attempts',
  'received_at',
  'processed_at',
  'next_attempt_at',
  'held_reference',
] as const;

type ListedRow = Omit<ProviderEventRow, 'payload'>;

/** An inbox row (without its payload) as the API shows it: `event_type` is `type`. */
function toView(row: ListedRow): ProviderEventView {
  return pickFields(providerEventSchema, { ...row, type: row.event_type });
}

/**
 * A page of provider events (SPEC §2 lists), newest first by default (sort `received_at`,
 * ties by id). Filters are exact matches. The total is always counted (the inbox keeps no
 * total: a counter would be one more write per received event); the status and event-key
 * filters are indexed (migration 0012).
 */
export async function listProviderEvents(
  db: Kysely<Database>,
  params: ListParams,
  filters: ProviderEventFilters,
): Promise<Page<ProviderEventView>> {
  return providerEventsList.page(db, params, {
    provider: filters.provider,
    status: filters.status,
    event_type: filters.type,
    event_key: filters.event_key,
  });
}

const providerEventsList = defineList({
  from: (db) => db.selectFrom('provider_events'),
  select: (query) => query.select(LIST_COLUMNS),
  sortable: PROVIDER_EVENT_SORT_FIELDS,
  map: (rows) => rows.map(toView),
});

/** The row of provider event `id`, or 404 `not_found` (unknown or malformed ids, SPEC §2). */
export async function findProviderEventRow(db: Kysely<Database>, id: string): Promise<ProviderEventRow> {
  const row = isIdOf('providerEvent', id)
    ? await db.selectFrom('provider_events').selectAll().where('id', '=', id).executeTakeFirst()
    : undefined;
  if (!row) throw new NotFoundError('provider event', id);
  return row;
}

/**
 * One provider event with its payload and links (see the header). Throws 404 `not_found`
 * for unknown or malformed ids.
 */
export async function getProviderEvent(db: Kysely<Database>, id: string): Promise<ProviderEventDetail> {
  return toDetail(db, await findProviderEventRow(db, id));
}

/** `row` as GET /api/provider-events/{id} shows it. */
export async function toDetail(db: Kysely<Database>, row: ProviderEventRow): Promise<ProviderEventDetail> {
  const parsed = parsePayload(row.payload);
  const event = parsed.ok ? readEvent(row, parsed.value) : undefined;
  const links = event ? await linksOf(db, row.provider, event) : { paymentId: null, refundIds: [] };
  return pickFields(providerEventDetailSchema, {
    ...toView(row),
    payment_id: links.paymentId,
    refund_ids: links.refundIds,
    payload: parsed.ok ? redactedPayload(row.provider, parsed.value) : null,
    payload_text: parsed.ok ? null : row.payload,
  });
}

/** The stored body parsed. Every body /api/notify stores parsed once already; a row written otherwise may not. */
function parsePayload(payload: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(payload) };
  } catch {
    return { ok: false };
  }
}

/** Our reading of the row's event, as processing reads it; undefined when it cannot be used. */
function readEvent(row: ProviderEventRow, body: unknown): ProviderEvent | undefined {
  try {
    return readProviderEvent(row.provider, () => body, new Date(row.received_at));
  } catch {
    return undefined;
  }
}

/** The payment (and refunds) `event` names, as recorded now. */
async function linksOf(
  db: Kysely<Database>,
  provider: string,
  event: ProviderEvent,
): Promise<{ paymentId: string | null; refundIds: string[] }> {
  switch (event.kind) {
    case 'ignored':
    case 'method_saved':
      return { paymentId: null, refundIds: [] };
    case 'payment_succeeded':
    case 'payment_failed':
      return { paymentId: await paymentIdOf(db, provider, event.payment.reference), refundIds: [] };
    case 'payment_linked':
      return { paymentId: await paymentIdOf(db, provider, event.canonicalReference), refundIds: [] };
    case 'refunds': {
      const paymentId = await paymentIdOf(db, provider, event.paymentReference);
      if (paymentId === null) return { paymentId, refundIds: [] };
      const refunds = await db
        .selectFrom('refunds')
        .select('id')
        .where('payment_id', '=', paymentId)
        .where('provider', '=', provider)
        .where(
          'provider_reference',
          'in',
          event.refunds.map((refund) => refund.reference),
        )
        .orderBy('created_at')
        .orderBy('id')
        .execute();
      return { paymentId, refundIds: refunds.map((refund) => refund.id) };
    }
  }
}

/**
 * The id of the payment `provider`/`reference` names: keyed by the reference's canonical one
 * when it is an alias (payments.references.ts), else by the reference itself; null if none.
 */
async function paymentIdOf(db: Kysely<Database>, provider: string, reference: string): Promise<string | null> {
  const row = await db
    .selectFrom('payments')
    .select('id')
    .where('provider', '=', provider)
    .where('provider_reference', '=', (eb) =>
      eb.fn.coalesce(
        eb
          .selectFrom('payment_references')
          .select('canonical_reference')
          .where('payment_references.provider', '=', provider)
          .where('payment_references.reference', '=', reference),
        eb.val(reference),
      ),
    )
    .executeTakeFirst();
  return row?.id ?? null;
}
