// Reading payments and refunds (SPEC §3 GET /api/payments, /api/refunds). They are written
// only from provider events, by payments.recording.ts.
import type { Kysely } from 'kysely';
import { readCount } from '../../db/counts.ts';
import type { Database } from '../../db/database.ts';
import { NotFoundError } from '../../http/errors.ts';
import { type ListParams, listPage, type Page } from '../../http/lists.ts';
import { isIdOf } from '../../shared/ids.ts';
import { PAYMENT_SORT_FIELDS, REFUND_SORT_FIELDS } from './payments.schemas.ts';
import type { PaymentRow, PaymentStatus, RefundRow, RefundStatus } from './payments.table.ts';

/** A payment as the API returns it (SPEC §4 fields). Amounts in minor units. */
export interface Payment {
  id: string;
  customer_id: string | null;
  subscription_id: string | null;
  provider: string;
  provider_reference: string;
  amount: number;
  amount_refunded: number;
  currency: string;
  status: PaymentStatus;
  failure_reason: string | null;
  paid_at: string | null;
  created_at: string;
  updated_at: string;
}

/** A refund as the API returns it. Amount in minor units; `failed` refunds do not count in `amount_refunded`. */
export interface Refund {
  id: string;
  payment_id: string;
  provider: string;
  provider_reference: string;
  amount: number;
  currency: string;
  status: RefundStatus;
  refunded_at: string;
  created_at: string;
  updated_at: string;
}

/** The API shape of a payments row (bigint columns as numbers). */
export function toPayment(row: PaymentRow): Payment {
  return {
    id: row.id,
    customer_id: row.customer_id,
    subscription_id: row.subscription_id,
    provider: row.provider,
    provider_reference: row.provider_reference,
    amount: Number(row.amount),
    amount_refunded: Number(row.amount_refunded),
    currency: row.currency,
    status: row.status,
    failure_reason: row.failure_reason,
    paid_at: row.paid_at,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/** The API shape of a refunds row. */
export function toRefund(row: RefundRow): Refund {
  return {
    id: row.id,
    payment_id: row.payment_id,
    provider: row.provider,
    provider_reference: row.provider_reference,
    amount: Number(row.amount),
    currency: row.currency,
    status: row.status,
    refunded_at: row.refunded_at,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

export interface PaymentFilters {
  customer_id?: string;
  subscription_id?: string;
  status?: PaymentStatus;
  provider?: string;
}

/** A page of payments, newest first by default; filters are exact matches. */
export async function listPayments(
  db: Kysely<Database>,
  params: ListParams,
  filters: PaymentFilters,
): Promise<Page<Payment>> {
  return listPage({
    query: db.selectFrom('payments'),
    select: (query) => query.selectAll(),
    sortable: PAYMENT_SORT_FIELDS,
    filters: {
      customer_id: filters.customer_id,
      subscription_id: filters.subscription_id,
      status: filters.status,
      provider: filters.provider,
    },
    params,
    keptTotal: () => readCount(db, 'payments'),
    map: (rows) => rows.map(toPayment),
  });
}

/** One payment. Throws 404 `not_found` for unknown or malformed ids. */
export async function getPayment(db: Kysely<Database>, id: string): Promise<Payment> {
  const row = isIdOf('payment', id)
    ? await db.selectFrom('payments').selectAll().where('id', '=', id).executeTakeFirst()
    : undefined;
  if (!row) throw new NotFoundError('payment', id);
  return toPayment(row);
}

/** A page of refunds, newest first by default; filter `payment_id`. */
export async function listRefunds(
  db: Kysely<Database>,
  params: ListParams,
  filters: { payment_id?: string },
): Promise<Page<Refund>> {
  return listPage({
    query: db.selectFrom('refunds'),
    select: (query) => query.selectAll(),
    sortable: REFUND_SORT_FIELDS,
    filters: { payment_id: filters.payment_id },
    params,
    keptTotal: () => readCount(db, 'refunds'),
    map: (rows) => rows.map(toRefund),
  });
}

/** One refund. Throws 404 `not_found` for unknown or malformed ids. */
export async function getRefund(db: Kysely<Database>, id: string): Promise<Refund> {
  const row = isIdOf('refund', id)
    ? await db.selectFrom('refunds').selectAll().where('id', '=', id).executeTakeFirst()
    : undefined;
  if (!row) throw new NotFoundError('refund', id);
  return toRefund(row);
}

/**
 * The sum (minor units) of payment `paymentId`'s succeeded refunds: its `amount_refunded`
 * by the one rule of SPEC §5 (refund-totals.ts). Reads inside the caller's transaction
 * when given one.
 */
export async function sumSucceededRefunds(db: Kysely<Database>, paymentId: string): Promise<number> {
  const sum = await db
    .selectFrom('refunds')
    .select((eb) => eb.fn.sum<number | string | null>('amount').as('total'))
    .where('payment_id', '=', paymentId)
    .where('status', '=', 'succeeded')
    .executeTakeFirstOrThrow();
  return Number(sum.total ?? 0);
}
