// Payments known by two provider ids (SPEC §5). Stripe API ≥ 2025-03-31 reports an
// invoice's payment under the invoice id (`invoice.*`) and under its PaymentIntent id
// (`payment_intent.*`), and only `invoice_payment.paid` tells they are one payment. The
// PaymentIntent is canonical: once linked, reports under the invoice id land on the payment
// keyed by the PaymentIntent, and payments recorded under both before the link are merged —
// so the end state does not depend on the order the events arrive in.
import { sql, type Transaction } from 'kysely';
import { rowsTable } from '../../db/bulk.ts';
import { isPostgres } from '../../db/column-types.ts';
import { compiledQuery, type Param } from '../../db/compiled-queries.ts';
import { addToCount } from '../../db/counts.ts';
import type { Database } from '../../db/database.ts';
import { forUpdate, lockKey, lockKeys } from '../../db/locking.ts';
import type { Clock } from '../../shared/clock.ts';
import { emitEvent } from '../events/events.service.ts';
import { pickFields } from '../../http/schemas.ts';
import { type Payment, paymentSchema } from './payments.schemas.ts';
import { sumSucceededRefunds } from './payments.service.ts';
import type { PaymentRow } from '../../db/tables/payments.table.ts';
import { statusAfterRefunds } from './payments.refund-totals.ts';

/**
 * Takes the transaction-scoped advisory lock of `provider`/`reference` on PostgreSQL (SQLite
 * runs one writer at a time). Reentrant within one transaction.
 */
export async function lockReference(trx: Transaction<Database>, provider: string, reference: string): Promise<void> {
  await lockKey(trx, `payment:${provider}:${reference}`);
}

/**
 * PostgreSQL: takes, in ONE statement and one order, the advisory locks of every reference a
 * batch of provider events will read or write (`references`: the references the events
 * name — a payment report's, a refund's payment, both sides of a link) and of the canonical
 * reference each of them is a known alias of. Sorted by (provider, reference) in byte order,
 * the order two batches, a lone report (its reference, then its canonical one) and a lone
 * link (alias `in_…`, then canonical `pi_…`) all agree on, so concurrent batches queue behind
 * each other instead of deadlocking (a deadlock in a batch that has already processed rows
 * could only be resolved by failing rows: inbox/inbox.batches.ts). A link committed while this waits can still name a
 * canonical reference not locked here: lockPaymentReference then takes it late (correct,
 * only no longer deadlock-free). Does nothing on SQLite (one writer) or for no references.
 */
export async function lockReferences(
  trx: Transaction<Database>,
  references: readonly { provider: string; reference: string }[],
): Promise<void> {
  if (!isPostgres(trx) || references.length === 0) return;
  const named = () =>
    rowsTable(
      trx,
      'n',
      ['provider', 'reference'],
      references.map(({ provider, reference }) => [provider, reference]),
    );
  await lockKeys(
    trx,
    sql<{ key: string }>`select 'payment:' || provider || ':' || reference as key
    from (
      select provider, reference from (
        select n.provider, n.reference from ${named()}
        union
        select r.provider, r.canonical_reference from payment_references r
        join ${named()} on r.provider = n.provider and r.reference = n.reference
      ) as wanted
      order by provider collate "C", reference collate "C"
    ) as ordered`,
  );
}

/**
 * The reference the payment named `reference` is keyed by: the canonical one when
 * `reference` is a known alias, else `reference` itself. The one place a report's reference
 * is resolved (lockPaymentByReference, and recordPaymentReport when it inserts).
 */
export async function canonicalReference(
  trx: Transaction<Database>,
  provider: string,
  reference: string,
): Promise<string> {
  const alias = await aliasOf.executeTakeFirst(trx, { provider, reference });
  return alias?.canonical_reference ?? reference;
}

const aliasOf = compiledQuery((db, param: Param<{ provider: string; reference: string }>) =>
  db
    .selectFrom('payment_references')
    .select('canonical_reference')
    .where('provider', '=', param('provider'))
    .where('reference', '=', param('reference')),
);

/** The payment keyed exactly `provider`/`reference` (no alias resolution), locked on PostgreSQL. */
export function selectPaymentForUpdate(
  trx: Transaction<Database>,
  provider: string,
  reference: string,
): Promise<PaymentRow | undefined> {
  return paymentForUpdate.executeTakeFirst(trx, { provider, reference });
}

const paymentForUpdate = compiledQuery((db, param: Param<{ provider: string; reference: string }>) =>
  forUpdate(
    db
      .selectFrom('payments')
      .selectAll()
      .where('provider', '=', param('provider'))
      .where('provider_reference', '=', param('reference')),
    db,
  ),
);

/** SQLite: the canonical reference of `reference` and the payment keyed by it, in one statement. */
const paymentByReferenceSqlite = compiledQuery((db, param: Param<{ provider: string; reference: string }>) => {
  const provider = param('provider');
  const reference = param('reference');
  const query = sql<PaymentRow & { canonical: string }>`
    select named.canonical, payments.*
    from (select coalesce(
            (select canonical_reference from payment_references where provider = ${provider} and reference = ${reference}),
            ${reference}) as canonical) as named
    left join payments on payments.provider = ${provider} and payments.provider_reference = named.canonical`;
  return { compile: () => query.compile(db) };
});

/**
 * The payment `provider`/`reference`, locked on PostgreSQL until the transaction ends. A
 * reference that is an alias (payment_references) finds the payment keyed by its
 * canonical reference. The references themselves are locked first (transaction-scoped
 * advisory locks), so they are locked even while no payment exists: a refund that finds no
 * payment and is held, and the payment's own processing that then looks for held refunds,
 * take turns instead of missing each other (SPEC §5 "whatever the order"). Lock order: the
 * reference as named, then its canonical one — lockPaymentLink takes alias then
 * canonical too, so no two transactions take them in opposite orders. Reentrant.
 */
export async function lockPaymentByReference(
  trx: Transaction<Database>,
  provider: string,
  reference: string,
): Promise<PaymentRow | undefined> {
  return (await lockPaymentReference(trx, provider, reference)).payment;
}

/** A payment reference resolved and locked by lockPaymentReference. */
export interface LockedReference {
  /** The reference the payment is (or will be) keyed by: the canonical one when the named one is an alias. */
  canonical: string;
  /** The payment recorded under `canonical`, if any. */
  payment: PaymentRow | undefined;
}

/**
 * lockPaymentByReference, also returning the canonical reference it resolved, which is
 * where a payment not recorded yet is inserted (recordPaymentReport): resolved once, under
 * the locks. On SQLite (no locks: one writer) the alias and the payment are read in one
 * statement.
 */
export async function lockPaymentReference(
  trx: Transaction<Database>,
  provider: string,
  reference: string,
): Promise<LockedReference> {
  if (!isPostgres(trx)) {
    const { canonical, ...payment } = (await paymentByReferenceSqlite.executeTakeFirst(trx, { provider, reference }))!;
    return { canonical, payment: payment.id === null ? undefined : payment };
  }
  await lockReference(trx, provider, reference);
  // PostgreSQL: one statement resolves the alias and, when there is none (the common case),
  // locks the payment keyed by `reference`. It runs after the advisory lock, in a snapshot
  // of its own, so it sees whatever the lock's previous holder committed.
  const { rows } = await paymentByReferenceForUpdate(provider, reference).execute(trx);
  const { canonical, ...payment } = rows[0]!;
  if (canonical === reference) {
    return { canonical, payment: payment.id === null ? undefined : (payment as PaymentRow) };
  }
  await lockReference(trx, provider, canonical);
  return { canonical, payment: await selectPaymentForUpdate(trx, provider, canonical) };
}

/** A reference named by a batch, as lockPaymentsByReferences found it. */
export interface BatchReference {
  /** The canonical reference when the named one is a known alias (its payment is not read), else null. */
  aliasOf: string | null;
  /** The payment keyed by the named reference (locked on PostgreSQL), when it is not an alias. */
  locked: LockedReference | null;
}

/** The key of `provider`/`reference` in lockPaymentsByReferences' answer. */
export function referenceKey(provider: string, reference: string): string {
  return `${provider}\u0000${reference}`;
}

/**
 * For a batch of provider events (SPEC §5), in ONE statement: for each named reference,
 * whether it is a known alias (payment_references) and, when it is not, the payment keyed by
 * it — locked FOR UPDATE on PostgreSQL, as lockPaymentReference locks it. The caller holds
 * the advisory locks of every reference and of their known canonical ones (lockReferences,
 * taken first), so the answer stays true until the caller itself changes it. Rows are locked
 * in (provider, reference) order. Answers keyed by referenceKey. For an alias the caller asks
 * lockPaymentReference (it takes the canonical lock and reads the payment there).
 */
export async function lockPaymentsByReferences(
  trx: Transaction<Database>,
  references: readonly { provider: string; reference: string }[],
): Promise<Map<string, BatchReference>> {
  const answers = new Map<string, BatchReference>();
  const distinct = new Map(references.map((ref) => [referenceKey(ref.provider, ref.reference), ref]));
  if (distinct.size === 0) return answers;
  const wanted = [...distinct.values()].sort((a, b) =>
    a.provider === b.provider ? compareText(a.reference, b.reference) : compareText(a.provider, b.provider),
  );
  const named = rowsTable(
    trx,
    'n',
    ['provider', 'reference'],
    wanted.map(({ provider, reference }) => [provider, reference]),
  );
  // Both dialects: the named references as a table with column names (one text for any
  // batch); PostgreSQL locks each payment row in the lateral read (the shape of
  // paymentByReferenceForUpdate).
  const query = isPostgres(trx)
    ? sql<BatchPaymentRow>`select n.provider as wanted_provider, n.reference as wanted_reference, r.canonical_reference as alias_of, p.*
      from ${named}
      left join payment_references r on r.provider = n.provider and r.reference = n.reference
      left join lateral (
        select * from payments
        where payments.provider = n.provider and payments.provider_reference = n.reference
          and r.canonical_reference is null
        for update
      ) as p on true`
    : sql<BatchPaymentRow>`select n.provider as wanted_provider, n.reference as wanted_reference, r.canonical_reference as alias_of, p.*
      from ${named}
      left join payment_references r on r.provider = n.provider and r.reference = n.reference
      left join payments p on p.provider = n.provider and p.provider_reference = n.reference`;
  const { rows } = await query.execute(trx);
  for (const { wanted_provider, wanted_reference, alias_of, ...payment } of rows) {
    const key = referenceKey(wanted_provider, wanted_reference);
    if (alias_of !== null) {
      answers.set(key, { aliasOf: alias_of, locked: null });
      continue;
    }
    const row = payment.id === null ? undefined : (payment as PaymentRow);
    answers.set(key, { aliasOf: null, locked: { canonical: wanted_reference, payment: row } });
  }
  return answers;
}

type BatchPaymentRow = Nullable<PaymentRow> & {
  wanted_provider: string;
  wanted_reference: string;
  alias_of: string | null;
};

function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * PostgreSQL: the statement lockPaymentReference runs after its advisory lock — the alias
 * resolved and, when there is none, the payment keyed by `reference` locked.
 */
function paymentByReferenceForUpdate(provider: string, reference: string) {
  return sql<Nullable<PaymentRow> & { canonical: string }>`
    select r.canonical, p.*
    from (
      select coalesce(
        (select canonical_reference from payment_references where provider = ${provider} and reference = ${reference}),
        ${reference}
      ) as canonical
    ) as r
    left join lateral (
      select * from payments
      where provider = ${provider} and provider_reference = ${reference} and r.canonical = ${reference}
      for update
    ) as p on true`;
}

/** Every column of `T` possibly null (a row of the nullable side of an outer join). */
type Nullable<T> = { [K in keyof T]: T[K] | null };

/** A link between two references of one payment, with the payments it concerns, locked. */
export interface LockedLink {
  provider: string;
  /** The alias (Stripe invoice `in_…`). */
  alias: string;
  /** The canonical reference (Stripe PaymentIntent `pi_…`). */
  canonical: string;
  /** The link was already recorded: nothing to do. */
  known: boolean;
  /** Why the link cannot be applied (the caller refuses the event), or null. */
  conflict: string | null;
  /** The payment recorded under the alias before the link, if any. */
  aliasPayment: PaymentRow | undefined;
  /** The payment recorded under the canonical reference, if any. */
  canonicalPayment: PaymentRow | undefined;
}

function isPaid(row: PaymentRow): boolean {
  return row.status !== 'failed';
}

/**
 * Why the two payments cannot be one, or null: merging must never mix currencies or
 * customers, nor promise back more than the merged payment holds. `pending`: the minor units
 * of both payments' pending API refunds.
 */
function mergeConflict(a: PaymentRow, b: PaymentRow, pending: number): string | null {
  if (a.currency !== b.currency) {
    return `payments ${a.id} (${a.currency}) and ${b.id} (${b.currency}) are in different currencies`;
  }
  if (a.customer_id !== null && b.customer_id !== null && a.customer_id !== b.customer_id) {
    return `payments ${a.id} and ${b.id} belong to different customers`;
  }
  if (a.subscription_id !== null && b.subscription_id !== null && a.subscription_id !== b.subscription_id) {
    return `payments ${a.id} and ${b.id} belong to different subscriptions`;
  }
  // The survivor's refunds are both rows' (each row's amount_refunded is its refunds' sum):
  // they must fit the amount the merged payment keeps (payments.refund-totals.ts, SPEC §5). Pending
  // API refunds count too, as for a new request (SPEC §10): each may still succeed.
  const money = mergedMoney(a, b);
  const refunded = Number(a.amount_refunded) + Number(b.amount_refunded);
  if (refunded + pending > Number(money.amount)) {
    const sums = pending === 0 ? `${refunded}` : `${refunded} (and ${pending} pending)`;
    return `refunds of ${sums} on payments ${a.id} and ${b.id} exceed the merged amount ${money.amount}`;
  }
  return null;
}

/** The minor units of the pending refunds of payments `paymentIds` (locked by the caller). */
async function pendingRefundsOf(trx: Transaction<Database>, paymentIds: string[]): Promise<number> {
  const row = await trx
    .selectFrom('refunds')
    .select((eb) => eb.fn.sum<number | string | null>('amount').as('pending'))
    .where('payment_id', 'in', paymentIds)
    .where('status', '=', 'pending')
    .executeTakeFirst();
  return Number(row?.pending ?? 0);
}

/** The two rows of one payment in creation order. */
function inCreationOrder(a: PaymentRow, b: PaymentRow): [PaymentRow, PaymentRow] {
  return a.created_at < b.created_at || (a.created_at === b.created_at && a.id < b.id) ? [a, b] : [b, a];
}

/**
 * The row whose report sets the merged payment's money: as one payment would show it had
 * both reports arrived on it — a success report sets the amount of a failed payment, a
 * later success changes nothing.
 */
function mergedMoney(a: PaymentRow, b: PaymentRow): PaymentRow {
  const [first, second] = inCreationOrder(a, b);
  return isPaid(first) || !isPaid(second) ? first : second;
}

/**
 * Locks what linking `alias` → `canonical` of `provider` touches: both references (alias
 * first, the order lockPaymentByReference uses) and the payments recorded under each, and
 * says whether the link is new and whether it can be applied. A reference links to one
 * canonical reference only (an invoice paid by a second PaymentIntent is a conflict), a
 * canonical reference is never itself an alias, and payments in different currencies or
 * of different customers or subscriptions are never merged. The caller locks the
 * subscriptions of both payments next, then calls recordPaymentLink.
 */
export async function lockPaymentLink(
  trx: Transaction<Database>,
  provider: string,
  alias: string,
  canonical: string,
): Promise<LockedLink> {
  const link: LockedLink = {
    provider,
    alias,
    canonical,
    known: false,
    conflict: null,
    aliasPayment: undefined,
    canonicalPayment: undefined,
  };
  await lockReference(trx, provider, alias);
  await lockReference(trx, provider, canonical);
  if (alias === canonical) return { ...link, known: true };
  const linked = await canonicalReference(trx, provider, alias);
  if (linked === canonical) {
    return { ...link, known: true, canonicalPayment: await selectPaymentForUpdate(trx, provider, canonical) };
  }
  if (linked !== alias) return { ...link, conflict: `${alias} is already linked to ${linked}` };
  const further = await canonicalReference(trx, provider, canonical);
  if (further !== canonical) return { ...link, conflict: `${canonical} is itself linked to ${further}` };
  const aliasPayment = await selectPaymentForUpdate(trx, provider, alias);
  const canonicalPayment = await selectPaymentForUpdate(trx, provider, canonical);
  const conflict =
    aliasPayment && canonicalPayment
      ? mergeConflict(
          aliasPayment,
          canonicalPayment,
          await pendingRefundsOf(trx, [aliasPayment.id, canonicalPayment.id]),
        )
      : null;
  return { ...link, conflict, aliasPayment, canonicalPayment };
}

/** What recording a link did. */
export interface LinkChange {
  /** The payment keyed by the canonical reference after the link, if any (as the API returns it). */
  payment: Payment | null;
  /** The payment merged into `payment` and deleted, if any. */
  mergedPaymentId: string | null;
  /**
   * The subscription effect the merge still owes `payment.subscription_id`: the merged
   * payment is paid (or failed) and no merged row had applied that to this subscription.
   */
  owedEffect: 'succeeded' | 'failed' | null;
}

/**
 * Records a link locked by lockPaymentLink (without conflict), each change with its event:
 * - no payment yet, or only under the canonical reference: the alias is recorded, nothing else;
 * - only under the alias: that payment is re-keyed to the canonical reference and
 *   `payment.succeeded`/`payment.failed` re-emitted with it;
 * - under both: merged into the one recorded first (its id stays; the other is deleted,
 *   `payment.merged` is emitted with the survivor and `merged_payment_id`). Attribution is
 *   filled from both; amount, currency, status and `paid_at` come from one report — the
 *   first paid one, else the first — as if the reports had arrived on one payment; refunds
 *   move over and `amount_refunded` is recomputed (payments.refund-totals.ts).
 * The caller applies `owedEffect` and repoints what referenced the merged payment's id
 * outside this module (dunning cases, held inbox rows). Errors: none of its own.
 */
export async function recordPaymentLink(
  trx: Transaction<Database>,
  clock: Clock,
  link: LockedLink,
): Promise<LinkChange> {
  if (link.conflict !== null) throw new Error(`link ${link.alias} → ${link.canonical} conflicts: ${link.conflict}`);
  const { provider, alias, canonical, aliasPayment, canonicalPayment } = link;
  const unchanged = {
    payment: canonicalPayment ? pickFields(paymentSchema, canonicalPayment) : null,
    mergedPaymentId: null,
    owedEffect: null,
  };
  if (link.known) return unchanged;
  const now = clock.now().toISOString();
  await trx
    .insertInto('payment_references')
    .values({ provider, reference: alias, canonical_reference: canonical, created_at: now })
    .onConflict((oc) => oc.columns(['provider', 'reference']).doNothing())
    .execute();
  if (!aliasPayment) return unchanged;

  if (!canonicalPayment) {
    const rekeyed: PaymentRow = { ...aliasPayment, provider_reference: canonical, updated_at: now };
    await trx
      .updateTable('payments')
      .set({ provider_reference: canonical, updated_at: now })
      .where('id', '=', aliasPayment.id)
      .execute();
    const payment = pickFields(paymentSchema, rekeyed);
    await emitEvent(trx, clock, isPaid(rekeyed) ? 'payment.succeeded' : 'payment.failed', payment);
    return { payment, mergedPaymentId: null, owedEffect: null };
  }
  return mergePayments(trx, clock, canonical, aliasPayment, canonicalPayment, now);
}

/** Merges the two payments of one provider payment (see recordPaymentLink). */
async function mergePayments(
  trx: Transaction<Database>,
  clock: Clock,
  canonical: string,
  a: PaymentRow,
  b: PaymentRow,
  now: string,
): Promise<LinkChange> {
  const [first, second] = inCreationOrder(a, b);
  const money = mergedMoney(a, b);
  await trx
    .updateTable('refunds')
    .set({ payment_id: first.id, updated_at: now })
    .where('payment_id', '=', second.id)
    .execute();
  await trx.deleteFrom('payments').where('id', '=', second.id).execute();
  const amount = Number(money.amount);
  let refunded = 0;
  if (isPaid(money)) {
    // Within the amount: mergeConflict refused a merge whose refunds would not fit.
    refunded = await sumSucceededRefunds(trx, first.id);
  }
  const changes = {
    provider_reference: canonical,
    customer_id: first.customer_id ?? second.customer_id,
    subscription_id: first.subscription_id ?? second.subscription_id,
    invoice_id: first.invoice_id ?? second.invoice_id,
    amount,
    amount_refunded: refunded,
    currency: money.currency,
    status: isPaid(money) ? statusAfterRefunds(amount, refunded) : money.status,
    failure_reason: money.failure_reason,
    paid_at: money.paid_at,
    updated_at: now,
  };
  await trx.updateTable('payments').set(changes).where('id', '=', first.id).execute();
  const merged: PaymentRow = { ...first, ...changes };
  const payment = pickFields(paymentSchema, merged);
  await emitEvent(trx, clock, 'payment.merged', { ...payment, merged_payment_id: second.id });
  // Counted after the event (one lock order for the shared counters, see insertPayment in payments.recording.ts).
  await addToCount(trx, 'payments', -1);
  // Each payment moves its subscription once: a row that already had this subscription and
  // this outcome applied it when it was recorded.
  const subscriptionId = merged.subscription_id;
  const applied = [first, second].some(
    (row) => row.subscription_id === subscriptionId && isPaid(row) === isPaid(merged),
  );
  const owedEffect = subscriptionId === null || applied ? null : isPaid(merged) ? 'succeeded' : 'failed';
  return { payment, mergedPaymentId: second.id, owedEffect };
}
