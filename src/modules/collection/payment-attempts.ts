// The only writer of `invoice_payment_attempts` (SPEC §10). An attempt is inserted, and
// committed, before its provider call (startAttempt), then given the call's outcome
// (recordAttemptOutcome). Nothing here calls a provider.
import type { Kysely, Transaction } from 'kysely';
import type { CollectingProvider } from '../../config.ts';
import type { Database } from '../../db/database.ts';
import type { Clock } from '../../shared/clock.ts';
import { newId } from '../../shared/ids.ts';
import type {
  AttemptKind,
  AttemptStatus,
  InvoicePaymentAttemptsTable,
  PaymentAttemptRow,
} from './payment-attempts.table.ts';

export type { PaymentAttemptRow };

/** Our reference for attempt `id` (`pat_X` → `pat-X`): Paystack allows no `_` in references. */
export function referenceOf(attemptId: string): string {
  return attemptId.replace('_', '-');
}

/**
 * Inserts a `pending` attempt for invoice `invoiceId` in `trx`: a new id and its reference,
 * `amount` (minor units) in `currency`. The caller commits it before calling the provider.
 */
export async function startAttempt(
  trx: Transaction<Database>,
  clock: Clock,
  attempt: { invoiceId: string; provider: CollectingProvider; kind: AttemptKind; amount: number; currency: string },
): Promise<PaymentAttemptRow> {
  const id = newId('paymentAttempt');
  const now = clock.now().toISOString();
  const row: InvoicePaymentAttemptsTable = {
    id,
    invoice_id: attempt.invoiceId,
    provider: attempt.provider,
    kind: attempt.kind,
    reference: referenceOf(id),
    status: 'pending',
    amount: attempt.amount,
    currency: attempt.currency,
    provider_object_id: null,
    url: null,
    expires_at: null,
    failure_code: null,
    failure_message: null,
    created_at: now,
    updated_at: now,
  };
  await trx.insertInto('invoice_payment_attempts').values(row).execute();
  return row;
}

/** What a provider call came to, for recordAttemptOutcome. Times are ISO 8601. */
export type AttemptOutcome =
  | { status: 'requires_action'; providerObjectId: string | null; url: string; expiresAt: string | null }
  | { status: Extract<AttemptStatus, 'failed' | 'unknown'>; failureCode: string; failureMessage: string };

/** Writes `outcome` to attempt `id` (any handle: one statement). Returns the row after. */
export async function recordAttemptOutcome(
  db: Kysely<Database>,
  clock: Clock,
  attempt: PaymentAttemptRow,
  outcome: AttemptOutcome,
): Promise<PaymentAttemptRow> {
  const set =
    outcome.status === 'requires_action'
      ? {
          status: outcome.status,
          provider_object_id: outcome.providerObjectId,
          url: outcome.url,
          expires_at: outcome.expiresAt,
        }
      : { status: outcome.status, failure_code: outcome.failureCode, failure_message: outcome.failureMessage };
  const row = { ...attempt, ...set, updated_at: clock.now().toISOString() };
  await db
    .updateTable('invoice_payment_attempts')
    .set({ ...set, updated_at: row.updated_at })
    .where('id', '=', attempt.id)
    .execute();
  return row;
}

/** Invoice `invoiceId`'s attempts, oldest first. */
export async function listInvoiceAttempts(db: Kysely<Database>, invoiceId: string): Promise<PaymentAttemptRow[]> {
  return db
    .selectFrom('invoice_payment_attempts')
    .selectAll()
    .where('invoice_id', '=', invoiceId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

/**
 * The newest checkout link of invoice `invoiceId` at `provider` for exactly `amount` (minor
 * units) in `currency` that the customer can still use: status `requires_action` with a `url`,
 * and either no `expires_at` and made after `madeAfter`, or expiring after `expiringAfter`
 * (both ISO 8601). Undefined when there is none. Read in the caller's transaction, under the
 * invoice's lock.
 */
export async function findLiveCheckoutLink(
  db: Kysely<Database>,
  link: {
    invoiceId: string;
    provider: CollectingProvider;
    amount: number;
    currency: string;
    madeAfter: string;
    expiringAfter: string;
  },
): Promise<(PaymentAttemptRow & { url: string }) | undefined> {
  const row = await db
    .selectFrom('invoice_payment_attempts')
    .selectAll()
    .where('invoice_id', '=', link.invoiceId)
    .where('provider', '=', link.provider)
    .where('kind', '=', 'checkout')
    .where('status', '=', 'requires_action')
    .where('amount', '=', link.amount)
    .where('currency', '=', link.currency)
    .where('url', 'is not', null)
    .where((eb) =>
      eb.or([
        eb.and([eb('expires_at', 'is', null), eb('created_at', '>', link.madeAfter)]),
        eb('expires_at', '>', link.expiringAfter),
      ]),
    )
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst();
  return row === undefined || row.url === null ? undefined : { ...row, url: row.url };
}
