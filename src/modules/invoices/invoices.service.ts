// The invoices API (SPEC §3, §9): list, get, void, mark uncollectible (finalizing a draft is
// the billing core's: billing/finalize.ts). Status changes go
// through invoices.lifecycle.ts (the transition table and its events); this module decides
// what each request means and owns its transaction. Issuing and settling invoices belong to
// the billing core (billing/settle.ts, billing/subscriptions.ts), not to this module.
import type { Kysely } from 'kysely';
import type { Database } from '../../db/database.ts';
import { transactionWithRetry } from '../../db/transaction.ts';
import { NotFoundError, StateConflictError } from '../../http/errors.ts';
import { defineList, type ListParams, type Page } from '../../http/lists.ts';
import { listInvoiceAttempts } from '../payment-attempts/payment-attempts.ts';
import { toPaymentAttempt } from '../payment-attempts/payment-attempts.schemas.ts';
import { closeInvoiceCase } from '../dunning/dunning.cases.ts';
import type { InvoiceStatus } from './invoices.status.ts';
import type { InvoiceDetail } from './invoices.schemas.ts';
import {
  findInvoiceRow,
  ForbiddenInvoiceTransitionError,
  type Invoice,
  type InvoiceContext,
  lockInvoice,
  toInvoice,
  transitionInvoice,
} from './invoices.lifecycle.ts';
import { clockFor } from '../test-clocks/test-clocks.time.ts';

export type { Invoice };

/** The exact 409 message for a void the invoice's state forbids (SPEC §9: from `paid` or `void`). */
export const CANNOT_VOID = 'cannot be voided in its current state';
/** The exact 409 message for a mark-uncollectible the state forbids (only `open` may be marked). */
export const CANNOT_MARK_UNCOLLECTIBLE = 'cannot be marked uncollectible in its current state';

/** The fields `sort_by` may name on GET /api/invoices (the first is the default). */
export const INVOICE_SORT_FIELDS = ['created_at', 'due_at', 'amount_due'] as const;

export interface InvoiceFilters {
  customer_id?: string;
  subscription_id?: string;
  status?: InvoiceStatus;
}

/** What the invoice requests need: the database, the clock and the numbering / URL settings. Deps fits. */
export interface InvoiceServiceDeps extends InvoiceContext {
  db: Kysely<Database>;
}

const invoicesList = defineList({
  from: (db) => db.selectFrom('invoices'),
  select: (query) => query.selectAll(),
  sortable: INVOICE_SORT_FIELDS,
  keptTotal: 'invoices',
  // The hosted URL depends on PUBLIC_URL, which the compiled list does not know: mapped by listInvoices.
  map: (rows) => rows,
});

/**
 * A page of invoices (SPEC §2 "Lists"), newest first by default; filters are exact matches.
 * `publicUrl` (PUBLIC_URL) builds each `hosted_invoice_url`.
 */
export async function listInvoices(
  db: Kysely<Database>,
  publicUrl: string,
  params: ListParams,
  filters: InvoiceFilters,
): Promise<Page<Invoice>> {
  const page = await invoicesList.page(db, params, {
    customer_id: filters.customer_id,
    subscription_id: filters.subscription_id,
    status: filters.status,
  });
  return { data: page.data.map((row) => toInvoice(row, publicUrl)), meta: page.meta };
}

/**
 * One invoice with its payment attempts, oldest first (SPEC §9, §10; only here: lists and
 * events carry no attempts). Throws 404 `not_found` for unknown or malformed ids (SPEC §2).
 */
export async function getInvoice(db: Kysely<Database>, publicUrl: string, id: string): Promise<InvoiceDetail> {
  const row = await findInvoiceRow(db, id);
  if (!row) throw new NotFoundError('invoice', id);
  const attempts = await listInvoiceAttempts(db, row.id);
  return { ...toInvoice(row, publicUrl), payment_attempts: attempts.map(toPaymentAttempt) };
}

/**
 * Voids invoice `id` (from `draft`, `open` or `uncollectible`; a draft never takes a number):
 * status `void`, `voided_at` now, emits
 * `invoice.voided`; an open dunning case chasing this invoice closes as `cancelled` (nothing
 * is owed on it any more) — one transaction. The subscription is not moved (its status is
 * left to payments, cancel and dunning). Lock order: invoices → dunning_cases. Throws 404
 * for unknown ids; 409 `validation_error` CANNOT_VOID from `paid`/`void`, changing nothing.
 */
export async function voidInvoice(deps: InvoiceServiceDeps, id: string): Promise<Invoice> {
  return changeInvoice(deps, id, 'void', CANNOT_VOID);
}

/**
 * Marks invoice `id` uncollectible (from `open` only): status `uncollectible`, emits
 * `invoice.marked_uncollectible`; it stays payable (a later payment still settles it). An
 * open dunning case chasing it closes as `cancelled` (the debt is written off, reminders
 * stop). Throws 404 for unknown ids; 409 `validation_error` CANNOT_MARK_UNCOLLECTIBLE from
 * any other state, changing nothing.
 */
export async function markInvoiceUncollectible(deps: InvoiceServiceDeps, id: string): Promise<Invoice> {
  return changeInvoice(deps, id, 'mark_uncollectible', CANNOT_MARK_UNCOLLECTIBLE);
}

async function changeInvoice(
  deps: InvoiceServiceDeps,
  id: string,
  event: 'void' | 'mark_uncollectible',
  refusal: string,
): Promise<Invoice> {
  return transactionWithRetry(deps.db, async (trx) => {
    const row = await lockInvoice(trx, id);
    const clock = await clockFor(trx, deps, row.test_clock_id);
    let invoice: Invoice;
    try {
      invoice = await transitionInvoice(trx, { ...deps, clock }, row, event);
    } catch (error) {
      if (error instanceof ForbiddenInvoiceTransitionError) throw new StateConflictError(refusal);
      throw error;
    }
    await closeInvoiceCase(trx, clock, row.id, 'cancelled');
    return invoice;
  });
}
