// Reading payments and refunds (SPEC §3 GET /api/payments, /api/refunds). They are written
// from provider events, by payments.recording.ts, and refunds requested through the API by
// payments.refund-requests.ts.
import type { Kysely } from 'kysely';
import type { Database } from '../../db/database.ts';
import { NotFoundError } from '../../http/errors.ts';
import { defineList, type ListParams, type Page } from '../../http/lists.ts';
import { isIdOf } from '../../shared/ids.ts';
import { type Payment, PAYMENT_SORT_FIELDS, type Refund, REFUND_SORT_FIELDS } from './payments.schemas.ts';
import type { PaymentStatus } from '../../db/tables/payments.table.ts';

export type { Payment, Refund };

export interface PaymentFilters {
  customer_id?: string;
  subscription_id?: string;
  status?: PaymentStatus;
  provider?: string;
}

const paymentsList = defineList({
  from: (db) => db.selectFrom('payments'),
  select: (query) => query.selectAll(),
  sortable: PAYMENT_SORT_FIELDS,
  keptTotal: 'payments',
  map: (rows) => rows,
});

/** A page of payments, newest first by default; filters are exact matches (compiled, http/lists.ts). */
export async function listPayments(
  db: Kysely<Database>,
  params: ListParams,
  filters: PaymentFilters,
): Promise<Page<Payment>> {
  return paymentsList.page(db, params, {
    customer_id: filters.customer_id,
    subscription_id: filters.subscription_id,
    status: filters.status,
    provider: filters.provider,
  });
}

/** One payment. Throws 404 `not_found` for unknown or malformed ids. */
export async function getPayment(db: Kysely<Database>, id: string): Promise<Payment> {
  const row = isIdOf('payment', id)
    ? await db.selectFrom('payments').selectAll().where('id', '=', id).executeTakeFirst()
    : undefined;
  if (!row) throw new NotFoundError('payment', id);
  return row;
}

const refundsList = defineList({
  from: (db) => db.selectFrom('refunds'),
  select: (query) => query.selectAll(),
  sortable: REFUND_SORT_FIELDS,
  keptTotal: 'refunds',
  map: (rows) => rows,
});

/** A page of refunds, newest first by default; filter `payment_id` (compiled, http/lists.ts). */
export async function listRefunds(
  db: Kysely<Database>,
  params: ListParams,
  filters: { payment_id?: string },
): Promise<Page<Refund>> {
  return refundsList.page(db, params, { payment_id: filters.payment_id });
}

/** One refund. Throws 404 `not_found` for unknown or malformed ids. */
export async function getRefund(db: Kysely<Database>, id: string): Promise<Refund> {
  const row = isIdOf('refund', id)
    ? await db.selectFrom('refunds').selectAll().where('id', '=', id).executeTakeFirst()
    : undefined;
  if (!row) throw new NotFoundError('refund', id);
  return row;
}

/**
 * The sum (minor units) of payment `paymentId`'s succeeded refunds: its `amount_refunded`
 * by the one rule of SPEC §5 (payments.refund-totals.ts). Reads inside the caller's transaction
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
