// Row locks across dialects. PostgreSQL locks rows (FOR UPDATE, SKIP LOCKED for workers);
// SQLite needs nothing: every transaction starts with BEGIN IMMEDIATE and holds the one
// write lock until it commits, so two writers never interleave.
//
// THE LOCK ORDER. A transaction that locks (or updates) rows of several of these tables
// takes them in this order, parent before child, and several rows of one table in id order:
//
//   customers → subscriptions → customer balance → invoices → dunning_cases
//     (creating a subscription locks its customer first, as deleting the customer does; a
//     payment locks its subscription, then the invoice it settles, then the dunning case; an
//     API change of an invoice that also moves its subscription locks the subscription first;
//     void / mark-uncollectible lock the invoice, then the case chasing it; an invoice that
//     takes credit locks its customer's balance — an advisory lock, balances.ledger.ts —
//     before it takes a number, and the renewal job locks its whole batch's balances at once;
//     a credit note locks its invoice's payments' references first, then this chain down to
//     the invoice, then the note itself: credit_notes come after invoices)
//   customers → promotion_codes → coupons → discounts
//     (redeeming a code or coupon — creating a subscription, creating or changing a customer,
//     a subscription's PATCH, which locks the customer before the subscription —
//     holds the customer's lock, then counts on the code, then on its coupon, each with one
//     conditional UPDATE that locks the row until commit, then writes the discount; the issuer
//     ends a `once` discount after the invoice that took it)
//   webhook_endpoints → webhook_deliveries → events
//     (the API's PATCH, delete, retry and test lock the endpoint first; so does the worker
//     recording attempts: its batch's endpoints in id order, before any delivery; an event's
//     delivery state is written last, by the events module's events.delivery-state.ts)
//
// The exact list totals (counts.ts) are outside the order: on PostgreSQL a count change
// appends a row to row_count_deltas and locks nothing shared (only the worker's fold updates
// row_counts, in a transaction of its own); on SQLite there is one writer anyway. Each
// table's owner moves its count in the function that inserts or deletes the row
// (customers.repository.ts, createSubscription, emitEvent, payments.recording.ts, issueInvoice), so no
// caller has to remember it or its place.
//
// Two transactions that follow it queue instead of deadlocking. A deadlock or serialization
// failure that happens anyway (PostgreSQL 40P01 / 40001) is retried by transactionWithRetry
// (transaction.ts), which the API's services use, so it never reaches a client as a 500.
import { type RawBuilder, type SelectQueryBuilder, sql, type Transaction } from 'kysely';
import { isPostgres } from './column-types.ts';
import type { Database } from './database.ts';
import { sendWithNextStatement } from './pg-traffic.ts';

/** Adds FOR UPDATE on PostgreSQL: concurrent changes of the row queue behind this transaction. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- works for any select
export function forUpdate<QB extends SelectQueryBuilder<any, any, any>>(
  query: QB,
  trx: Parameters<typeof isPostgres>[0],
): QB {
  return (isPostgres(trx) ? query.forUpdate() : query) as QB;
}

/**
 * Adds FOR UPDATE SKIP LOCKED on PostgreSQL: a worker claims only rows no other worker
 * holds, and a crashed worker's rows are free again when its transaction rolls back.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- works for any select
export function claimRows<QB extends SelectQueryBuilder<any, any, any>>(
  query: QB,
  trx: Parameters<typeof isPostgres>[0],
): QB {
  return (isPostgres(trx) ? query.forUpdate().skipLocked() : query) as QB;
}

/**
 * PostgreSQL: takes the transaction-scoped advisory lock named `key` (held until the
 * transaction ends; reentrant). Its only answer is "locked", so it is written in front of the
 * transaction's next statement (pg-traffic.ts). Does nothing on SQLite (one writer at a time).
 */
export async function lockKey(trx: Transaction<Database>, key: string): Promise<void> {
  if (!isPostgres(trx)) return;
  await sendWithNextStatement(trx, sql`select pg_advisory_xact_lock(hashtextextended(${key}, 0))`);
}

/**
 * PostgreSQL: takes, in ONE statement, the transaction-scoped advisory locks named by the rows
 * of `keys` (a query with one text column `key`), in the order of its rows — the caller's
 * order is the lock order. Written in front of the next statement like lockKey. Does
 * nothing on SQLite.
 */
export async function lockKeys(trx: Transaction<Database>, keys: RawBuilder<{ key: string }>): Promise<void> {
  if (!isPostgres(trx)) return;
  await sendWithNextStatement(trx, sql`select pg_advisory_xact_lock(hashtextextended(k.key, 0)) from (${keys}) as k`);
}
