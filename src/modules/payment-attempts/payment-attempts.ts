// The only writer of `invoice_payment_attempts` (SPEC §10). An attempt is inserted, and
// committed, before its provider call (startAttempt), then given the call's outcome
// (recordAttemptOutcome). Nothing here calls a provider.
import { type Kysely, sql, type Transaction } from 'kysely';
import type { ProviderName } from '../../shared/provider-names.ts';
import { insertRows, inList } from '../../db/bulk.ts';
import type { Database } from '../../db/database.ts';
import { forUpdate } from '../../db/locking.ts';
import type { Clock } from '../../shared/clock.ts';
import { newId } from '../../shared/ids.ts';
import type {
  AttemptKind,
  AttemptStatus,
  InvoicePaymentAttemptsTable,
  PaymentAttemptRow,
} from '../../db/tables/payment-attempts.table.ts';
import { compiledQuery, type Param } from '../../db/compiled-queries.ts';

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
  attempt: {
    invoiceId: string;
    provider: ProviderName;
    kind: AttemptKind;
    amount: number;
    currency: string;
    /** Charges: the saved method charged. */
    paymentMethodId?: string;
    /**
     * The lease the caller holds (owner, until: ISO 8601) while it calls the provider: a
     * charge's, or a Pay button press's (another press waits for its link instead of making one).
     */
    lease?: { owner: string; until: string };
  },
): Promise<PaymentAttemptRow> {
  const row = pendingAttemptRow(clock, attempt);
  await trx.insertInto('invoice_payment_attempts').values(row).execute();
  return row;
}

/** What startAttempt takes: the attempt to start. */
export type AttemptStart = Parameters<typeof startAttempt>[2];

/** The row startAttempt inserts for `attempt` (a new id, `pending`), not written. */
export function pendingAttemptRow(clock: Clock, attempt: AttemptStart): PaymentAttemptRow {
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
    payment_method_id: attempt.paymentMethodId ?? null,
    locked_until: attempt.lease?.until ?? null,
    locked_by: attempt.lease?.owner ?? null,
    created_at: now,
    updated_at: now,
  };
  return row;
}

/**
 * Inserts `rows` (made by pendingAttemptRow) in ONE statement: a charge batch's new attempts
 * (billing/charges.ts claimCharges). The caller commits them before calling the provider.
 */
export async function insertAttempts(trx: Transaction<Database>, rows: readonly PaymentAttemptRow[]): Promise<void> {
  await insertRows(trx, 'invoice_payment_attempts', rows);
}

/**
 * The unresolved charge (findUnresolvedCharge) of each of invoices `invoiceIds`, in ONE
 * statement, locked on PostgreSQL; keyed by invoice id (an invoice without one is absent).
 */
export async function findUnresolvedCharges(
  trx: Transaction<Database>,
  invoiceIds: readonly string[],
): Promise<Map<string, PaymentAttemptRow>> {
  const found = new Map<string, PaymentAttemptRow>();
  if (invoiceIds.length === 0) return found;
  const rows = await forUpdate(
    trx
      .selectFrom('invoice_payment_attempts')
      .selectAll()
      .where(inList(trx, 'invoice_id', [...new Set(invoiceIds)]))
      .where('kind', '=', 'charge')
      .where('status', 'in', ['pending', 'unknown'])
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc'),
    trx,
  ).execute();
  for (const row of rows) if (!found.has(row.invoice_id)) found.set(row.invoice_id, row);
  return found;
}

/** What a provider call came to, for recordAttemptOutcome. Times are ISO 8601. */
export type AttemptOutcome =
  | { status: 'requires_action'; providerObjectId: string | null; url: string; expiresAt: string | null }
  | { status: Extract<AttemptStatus, 'failed' | 'unknown'>; failureCode: string; failureMessage: string };

/**
 * Writes `outcome` to attempt `id` (any handle: one statement), giving back its lease if it had
 * one (a Pay button press's). Returns the row after.
 */
export async function recordAttemptOutcome(
  db: Kysely<Database>,
  clock: Clock,
  attempt: PaymentAttemptRow,
  outcome: AttemptOutcome,
): Promise<PaymentAttemptRow> {
  const set = {
    ...(outcome.status === 'requires_action'
      ? {
          status: outcome.status,
          provider_object_id: outcome.providerObjectId,
          url: outcome.url,
          expires_at: outcome.expiresAt,
        }
      : { status: outcome.status, failure_code: outcome.failureCode, failure_message: outcome.failureMessage }),
    locked_until: null,
    locked_by: null,
  };
  const row = { ...attempt, ...set, updated_at: clock.now().toISOString() };
  await db
    .updateTable('invoice_payment_attempts')
    .set({ ...set, updated_at: row.updated_at })
    .where('id', '=', attempt.id)
    .execute();
  return row;
}

/**
 * Invoice `invoiceId`'s unresolved charge (`pending` or `unknown`), the newest, locked on
 * PostgreSQL; undefined when it has none. At most one exists: a new charge is started only
 * when none is unresolved (billing/charges.ts, under the invoice's lock).
 */
export async function findUnresolvedCharge(
  trx: Transaction<Database>,
  invoiceId: string,
): Promise<PaymentAttemptRow | undefined> {
  return forUpdate(
    trx
      .selectFrom('invoice_payment_attempts')
      .selectAll()
      .where('invoice_id', '=', invoiceId)
      .where('kind', '=', 'charge')
      .where('status', 'in', ['pending', 'unknown'])
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc'),
    trx,
  ).executeTakeFirst();
}

/** Gives the lease of unresolved attempt `attempt` to `owner` until `until` (ISO 8601). Returns the row after. */
export async function leaseAttempt(
  trx: Transaction<Database>,
  clock: Clock,
  attempt: PaymentAttemptRow,
  lease: { owner: string; until: string },
): Promise<PaymentAttemptRow> {
  const set = { locked_until: lease.until, locked_by: lease.owner, updated_at: clock.now().toISOString() };
  await trx.updateTable('invoice_payment_attempts').set(set).where('id', '=', attempt.id).execute();
  return { ...attempt, ...set };
}

/** Attempt `id`, locked on PostgreSQL (the caller holds its invoice's lock first: lock order). */
export async function lockAttempt(trx: Transaction<Database>, id: string): Promise<PaymentAttemptRow | undefined> {
  return attemptForUpdate.executeTakeFirst(trx, { id });
}

const attemptForUpdate = compiledQuery((db, param: Param<{ id: string }>) =>
  forUpdate(db.selectFrom('invoice_payment_attempts').selectAll().where('id', '=', param('id')), db),
);

/** What a charge came to (billing/charges.ts). Times ISO 8601. */
export type ChargeAttemptOutcome =
  | { status: 'succeeded'; providerObjectId: string | null }
  | {
      status: 'requires_action';
      providerObjectId: string | null;
      url: string | null;
      failureCode: string;
      failureMessage: string;
    }
  | { status: 'failed' | 'unknown'; providerObjectId: string | null; failureCode: string; failureMessage: string };

/**
 * Writes a charge's `outcome` to the locked attempt `attempt` in `trx`; the lease is given
 * back (an `unknown` attempt is picked up again when its invoice is next due). Returns the row after.
 */
export async function recordChargeOutcome(
  trx: Transaction<Database>,
  clock: Clock,
  attempt: PaymentAttemptRow,
  outcome: ChargeAttemptOutcome,
): Promise<PaymentAttemptRow> {
  const set = {
    status: outcome.status,
    provider_object_id: outcome.providerObjectId ?? attempt.provider_object_id,
    url: outcome.status === 'requires_action' ? outcome.url : attempt.url,
    failure_code: outcome.status === 'succeeded' ? null : outcome.failureCode,
    failure_message: outcome.status === 'succeeded' ? null : outcome.failureMessage,
    locked_until: null,
    locked_by: null,
    updated_at: clock.now().toISOString(),
  };
  await trx.updateTable('invoice_payment_attempts').set(set).where('id', '=', attempt.id).execute();
  return { ...attempt, ...set };
}

/**
 * recordChargeOutcome({status: 'succeeded', providerObjectId}) for several locked attempts:
 * one statement per distinct time (one for a batch in one clock), the provider object ids
 * that change given per row. Returns the rows after, in entry order.
 */
export async function recordChargesSucceeded(
  trx: Transaction<Database>,
  entries: readonly { clock: Clock; attempt: PaymentAttemptRow; providerObjectId: string | null }[],
): Promise<PaymentAttemptRow[]> {
  const after: PaymentAttemptRow[] = [];
  const byTime = new Map<string, { ids: string[]; objects: [string, string | null][] }>();
  for (const { clock, attempt, providerObjectId } of entries) {
    const set = {
      status: 'succeeded' as const,
      provider_object_id: providerObjectId ?? attempt.provider_object_id,
      url: attempt.url,
      failure_code: null,
      failure_message: null,
      locked_until: null,
      locked_by: null,
      updated_at: clock.now().toISOString(),
    };
    after.push({ ...attempt, ...set });
    const group = byTime.get(set.updated_at) ?? { ids: [], objects: [] };
    group.ids.push(attempt.id);
    if (set.provider_object_id !== attempt.provider_object_id) group.objects.push([attempt.id, set.provider_object_id]);
    byTime.set(set.updated_at, group);
  }
  for (const [now, { ids, objects }] of byTime) {
    const objectIds =
      objects.length === 0
        ? {}
        : {
            provider_object_id: sql<string | null>`case id ${sql.join(
              objects.map(([id, object]) => sql`when ${id} then ${object}`),
              sql` `,
            )} else provider_object_id end`,
          };
    await trx
      .updateTable('invoice_payment_attempts')
      .set({
        status: 'succeeded',
        ...objectIds,
        failure_code: null,
        failure_message: null,
        locked_until: null,
        locked_by: null,
        updated_at: now,
      })
      .where(inList(trx, 'id', ids))
      .execute();
  }
  return after;
}

/**
 * The payment that paid an invoice, as its provider knows it (SPEC §10 "Exactly once"):
 * `reference` is the payment's provider reference (Paystack: the reference we sent; Stripe:
 * the PaymentIntent id); `attemptId` is the `payment_attempt_id` its metadata carries (a
 * charge of ours names its attempt there), when any.
 */
export interface PaymentIdentity {
  provider: string;
  reference: string;
  attemptId?: string | null;
}

/** `failure_code` of a charge closed because another payment paid its invoice first. */
export const INVOICE_PAID_ELSEWHERE = 'invoice_paid';

/** True when `payment` is the one `attempt` charged: same provider, and its reference or metadata name the attempt. */
function isAttemptPayment(attempt: PaymentAttemptRow, payment: PaymentIdentity | null | undefined): boolean {
  if (!payment || payment.provider !== attempt.provider) return false;
  return (
    payment.reference === attempt.reference ||
    payment.reference === attempt.provider_object_id ||
    payment.attemptId === attempt.id
  );
}

/**
 * Finishes the unresolved (`pending`/`unknown`) charges of invoice `invoiceId`, which a
 * payment has just paid (SPEC §10 "Exactly once"), in `trx` under the invoice's lock: the
 * attempt whose charge that payment is (`paidBy`, isAttemptPayment) becomes `succeeded`;
 * any other is closed `failed` with INVOICE_PAID_ELSEWHERE, so no worker calls the provider
 * for it again (a worker still waiting for its answer records a success it brings:
 * billing/charges.ts). The lease is given back either way. Returns the rows changed.
 */
export async function finishChargesOfPaidInvoice(
  trx: Transaction<Database>,
  clock: Clock,
  invoiceId: string,
  paidBy?: PaymentIdentity | null,
): Promise<PaymentAttemptRow[]> {
  const unresolved = await forUpdate(
    trx
      .selectFrom('invoice_payment_attempts')
      .selectAll()
      .where('invoice_id', '=', invoiceId)
      .where('kind', '=', 'charge')
      .where('status', 'in', ['pending', 'unknown'])
      .orderBy('id'),
    trx,
  ).execute();
  const finished: PaymentAttemptRow[] = [];
  for (const attempt of unresolved) {
    const outcome: ChargeAttemptOutcome = isAttemptPayment(attempt, paidBy)
      ? // Stripe's PaymentIntent id is the object; Paystack's reference is our own.
        { status: 'succeeded', providerObjectId: paidBy!.reference === attempt.reference ? null : paidBy!.reference }
      : {
          status: 'failed',
          providerObjectId: null,
          failureCode: INVOICE_PAID_ELSEWHERE,
          failureMessage: 'the invoice was paid by another payment before this charge was answered',
        };
    finished.push(await recordChargeOutcome(trx, clock, attempt, outcome));
  }
  return finished;
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
    provider: ProviderName;
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

/**
 * The charge attempts of invoices `invoiceIds` still in flight with the provider (SPEC §11
 * "Deleting"): `pending` (a call under way, or a worker died mid-call and the next one asks
 * the provider), or `unknown` while its invoice is `open` and due again (the worker will ask:
 * billing/charges.ts). An `unknown` attempt whose re-asks gave up, or whose invoice was
 * settled otherwise, no longer counts. Read in the caller's transaction, after it locked the
 * invoices; oldest first.
 */
export async function findChargesInFlight(
  trx: Transaction<Database>,
  invoiceIds: readonly string[],
): Promise<Pick<PaymentAttemptRow, 'id' | 'invoice_id' | 'status'>[]> {
  if (invoiceIds.length === 0) return [];
  return trx
    .selectFrom('invoice_payment_attempts')
    .innerJoin('invoices', 'invoices.id', 'invoice_payment_attempts.invoice_id')
    .select(['invoice_payment_attempts.id', 'invoice_payment_attempts.invoice_id', 'invoice_payment_attempts.status'])
    .where('invoice_payment_attempts.invoice_id', 'in', invoiceIds)
    .where('invoice_payment_attempts.kind', '=', 'charge')
    .where((eb) =>
      eb.or([
        eb('invoice_payment_attempts.status', '=', 'pending'),
        eb.and([
          eb('invoice_payment_attempts.status', '=', 'unknown'),
          eb('invoices.status', '=', 'open'),
          eb('invoices.next_payment_attempt_at', 'is not', null),
        ]),
      ]),
    )
    .orderBy('invoice_payment_attempts.created_at')
    .orderBy('invoice_payment_attempts.id')
    .execute();
}

/**
 * The `pending` charge attempts of test clock `testClockId`'s open invoices due for a charge
 * (SPEC §11: what an advance must see resolved before it ends `ready`), with their lease's end
 * (`locked_until`, real time) and the invoice's next attempt (the clock's time). Reads the
 * clock's open invoices by index (invoices_open_by_due_at), each one's attempts by
 * invoice; no lock.
 */
export async function findPendingChargesOfClock(
  db: Kysely<Database>,
  testClockId: string,
): Promise<
  { attempt_id: string; invoice_id: string; locked_until: string | null; next_payment_attempt_at: string | null }[]
> {
  return (
    db
      .selectFrom('invoices')
      .innerJoin('invoice_payment_attempts', 'invoice_payment_attempts.invoice_id', 'invoices.id')
      .select([
        'invoice_payment_attempts.id as attempt_id',
        'invoices.id as invoice_id',
        'invoice_payment_attempts.locked_until',
        'invoices.next_payment_attempt_at',
      ])
      .where('invoices.test_clock_id', '=', testClockId)
      // Literals: SQLite uses the partial index only then.
      .where('invoices.status', '=', sql.lit('open'))
      .where('invoice_payment_attempts.kind', '=', 'charge')
      .where('invoice_payment_attempts.status', '=', 'pending')
      .orderBy('invoices.id')
      .execute()
  );
}

/**
 * The newest `pending` checkout attempt of invoice `invoiceId` at `provider` for exactly
 * `amount` (minor units) in `currency` whose lease runs after `leasedAfter` (ISO 8601): a Pay
 * button press calling the provider right now (SPEC §10 "Pay button"). Undefined when there is
 * none; a press that died mid-call stops counting when its lease ends. Read in the caller's
 * transaction, under the invoice's lock, so two presses cannot both miss each other.
 */
export async function findCheckoutInFlight(
  trx: Transaction<Database>,
  attempt: { invoiceId: string; provider: ProviderName; amount: number; currency: string; leasedAfter: string },
): Promise<PaymentAttemptRow | undefined> {
  return trx
    .selectFrom('invoice_payment_attempts')
    .selectAll()
    .where('invoice_id', '=', attempt.invoiceId)
    .where('provider', '=', attempt.provider)
    .where('kind', '=', 'checkout')
    .where('status', '=', 'pending')
    .where('amount', '=', attempt.amount)
    .where('currency', '=', attempt.currency)
    .where('locked_until', '>', attempt.leasedAfter)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst();
}

/** Attempt `id` as committed now (no lock), or undefined. */
export async function findAttempt(db: Kysely<Database>, id: string): Promise<PaymentAttemptRow | undefined> {
  return db.selectFrom('invoice_payment_attempts').selectAll().where('id', '=', id).executeTakeFirst();
}

/**
 * Deletes every payment attempt of invoices `invoiceIds` (`inv_…`, locked by the caller, none
 * of them with a charge in flight: findChargesInFlight) — a test clock's delete (SPEC §11
 * "Deleting"), just before the invoices go. No events.
 */
export async function deleteAttemptsOfInvoices(
  trx: Transaction<Database>,
  invoiceIds: readonly string[],
): Promise<void> {
  if (invoiceIds.length === 0) return;
  await trx.deleteFrom('invoice_payment_attempts').where('invoice_id', 'in', invoiceIds).execute();
}
