// Credit notes (SPEC §14 "Credit notes"): the only writer of `credit_notes` and
// `credit_note_numbers`. Each change writes the row and emits its `credit_note.*` event in the
// caller's transaction (SPEC §6 outbox). What a note does to its invoice, the ledger and the
// payments is the billing core's (billing/credit-notes.ts); this module only keeps the notes.
import { randomBytes } from 'node:crypto';
import { type Kysely, sql, type Transaction } from 'kysely';
import type { Database } from '../../db/database.ts';
import { forUpdate } from '../../db/locking.ts';
import { NotFoundError } from '../../http/errors.ts';
import { defineList, type ListParams, type Page } from '../../http/lists.ts';
import { pickFields } from '../../http/schemas.ts';
import type { Clock } from '../../shared/clock.ts';
import { isIdOf, newId } from '../../shared/ids.ts';
import { emitEvent } from '../events/events.service.ts';
import type { CreditNoteReason, CreditNoteRow, CreditNotesTable } from '../../db/tables/credit-notes.table.ts';
import {
  CREDIT_NOTE_SORT_FIELDS,
  type CreditNote,
  type CreditNoteLine,
  type CreditNoteRefund,
  creditNoteSchema,
} from './credit-notes.schemas.ts';

export type { CreditNote, CreditNoteLine, CreditNoteRefund };

/** `<publicUrl>/c/<token>`: a credit note's hosted page (SPEC §14); its PDF is the same URL + `.pdf`. */
export function hostedCreditNoteUrl(publicUrl: string, token: string): string {
  return `${publicUrl}/c/${token}`;
}

/**
 * A credit note row as the API and events show it: amounts as numbers, `lines` and `refunds`
 * parsed, `hosted_credit_note_url` built from `publicUrl` (PUBLIC_URL) and the row's token.
 */
export function toCreditNote(row: CreditNoteRow, publicUrl: string): CreditNote {
  return pickFields(creditNoteSchema, {
    ...row,
    hosted_credit_note_url: hostedCreditNoteUrl(publicUrl, row.hosted_token),
    amount: Number(row.amount),
    pre_payment_amount: Number(row.pre_payment_amount),
    post_payment_amount: Number(row.post_payment_amount),
    refund_amount: Number(row.refund_amount),
    credit_amount: Number(row.credit_amount),
    out_of_band_amount: Number(row.out_of_band_amount),
    lines: JSON.parse(row.lines) as CreditNoteLine[],
    refunds: JSON.parse(row.refunds) as CreditNoteRefund[],
  });
}

/**
 * The sequence a credit note takes its number from (SPEC §14, §11): `CN` for real customers,
 * `CN-<clock id>` for a test clock's, so a clock never takes numbers from the real sequence.
 */
export function creditNotePrefix(testClockId: string | null): string {
  return testClockId === null ? 'CN' : `CN-${testClockId}`;
}

/**
 * The next number of sequence `prefix`, `<prefix>-<000001>`, moved in `trx`: the counter row
 * stays locked until commit (PostgreSQL) and a rollback gives the number back, so numbers are
 * gap-free and unique across instances (as invoices.lifecycle.ts nextInvoiceNumber).
 */
export async function nextCreditNoteNumber(trx: Transaction<Database>, prefix: string): Promise<string> {
  const row = await trx
    .insertInto('credit_note_numbers')
    .values({ prefix, last_number: 1 })
    .onConflict((conflict) =>
      conflict.column('prefix').doUpdateSet({ last_number: sql<number>`credit_note_numbers.last_number + 1` }),
    )
    .returning('last_number')
    .executeTakeFirstOrThrow();
  return `${prefix}-${String(Number(row.last_number)).padStart(6, '0')}`;
}

/** What issuing a credit note stores (minor units; the billing core checked every rule). */
export interface CreditNoteDraft {
  invoiceId: string;
  customerId: string;
  testClockId: string | null;
  currency: string;
  amount: number;
  prePaymentAmount: number;
  postPaymentAmount: number;
  refundAmount: number;
  creditAmount: number;
  outOfBandAmount: number;
  reason: CreditNoteReason | null;
  memo: string | null;
  lines: Omit<CreditNoteLine, 'id'>[];
  refunds: CreditNoteRefund[];
  balanceTransactionId: string | null;
  requestKey: string | null;
}

/** A new credit note id, known before the row is written (the ledger entry names it). */
export function newCreditNoteId(): string {
  return newId('creditNote');
}

/**
 * Stores credit note `id` of `draft` `issued` with the next number of its sequence and a new
 * hosted page token, and emits `credit_note.created`, in `trx`, stamped by `clock` (the
 * customer's). Returns the note (its hosted URL under `publicUrl`).
 */
export async function insertCreditNote(
  trx: Transaction<Database>,
  clock: Clock,
  publicUrl: string,
  id: string,
  draft: CreditNoteDraft,
): Promise<CreditNote> {
  const now = clock.now().toISOString();
  const row: CreditNotesTable = {
    id,
    number: await nextCreditNoteNumber(trx, creditNotePrefix(draft.testClockId)),
    invoice_id: draft.invoiceId,
    customer_id: draft.customerId,
    currency: draft.currency,
    amount: draft.amount,
    pre_payment_amount: draft.prePaymentAmount,
    post_payment_amount: draft.postPaymentAmount,
    refund_amount: draft.refundAmount,
    credit_amount: draft.creditAmount,
    out_of_band_amount: draft.outOfBandAmount,
    reason: draft.reason,
    memo: draft.memo,
    lines: JSON.stringify(draft.lines.map((line) => ({ id: newId('creditNoteLine'), ...line }))),
    refunds: JSON.stringify(draft.refunds),
    balance_transaction_id: draft.balanceTransactionId,
    reversal_balance_transaction_id: null,
    status: 'issued',
    hosted_token: randomBytes(32).toString('base64url'),
    request_key: draft.requestKey,
    test_clock_id: draft.testClockId,
    created_at: now,
    updated_at: now,
    voided_at: null,
  };
  await trx.insertInto('credit_notes').values(row).execute();
  const note = toCreditNote(row, publicUrl);
  await emitEvent(trx, clock, 'credit_note.created', note);
  return note;
}

/** The credit note a request with `requestKey` (Idempotency-Key scope, hashed) made, if any. */
export async function findCreditNoteByRequestKey(
  db: Kysely<Database>,
  requestKey: string,
): Promise<CreditNoteRow | undefined> {
  return db.selectFrom('credit_notes').selectAll().where('request_key', '=', requestKey).executeTakeFirst();
}

/** Credit note `id`, or undefined (also for a malformed id: no round trip). */
export async function findCreditNoteRow(db: Kysely<Database>, id: string): Promise<CreditNoteRow | undefined> {
  if (!isIdOf('creditNote', id)) return undefined;
  return db.selectFrom('credit_notes').selectAll().where('id', '=', id).executeTakeFirst();
}

/**
 * The credit note whose hosted page token is `token` (`/c/{token}`), or undefined — also for a
 * malformed token, without a round trip (a token is 43 base64url characters).
 */
export async function findCreditNoteRowByToken(
  db: Kysely<Database>,
  token: string,
): Promise<CreditNoteRow | undefined> {
  if (!/^[A-Za-z0-9_-]{43}$/.test(token)) return undefined;
  return db.selectFrom('credit_notes').selectAll().where('hosted_token', '=', token).executeTakeFirst();
}

/** Credit note `id` locked in `trx` (PostgreSQL). Throws 404 `not_found` for an unknown or malformed id. */
export async function lockCreditNote(trx: Transaction<Database>, id: string): Promise<CreditNoteRow> {
  const row = isIdOf('creditNote', id)
    ? await forUpdate(trx.selectFrom('credit_notes').selectAll().where('id', '=', id), trx).executeTakeFirst()
    : undefined;
  if (!row) throw new NotFoundError('credit note', id);
  return row;
}

/**
 * What invoice `invoiceId`'s issued (non-void) credit notes credit, minor units: in all, on
 * each invoice line (`il_…` → amount), and in refunds. Read under the invoice's lock, so two
 * notes issued at once never exceed the invoice (SPEC §14).
 */
export async function creditedOnInvoice(
  trx: Transaction<Database>,
  invoiceId: string,
): Promise<{ total: number; refunded: number; byLine: Map<string, number> }> {
  const rows = await trx
    .selectFrom('credit_notes')
    .select(['amount', 'refund_amount', 'lines'])
    .where('invoice_id', '=', invoiceId)
    .where('status', '=', 'issued')
    .execute();
  let total = 0;
  let refunded = 0;
  const byLine = new Map<string, number>();
  for (const row of rows) {
    total += Number(row.amount);
    refunded += Number(row.refund_amount);
    for (const line of JSON.parse(row.lines) as CreditNoteLine[]) {
      byLine.set(line.invoice_line_id, (byLine.get(line.invoice_line_id) ?? 0) + line.amount);
    }
  }
  return { total, refunded, byLine };
}

/**
 * Marks the locked issued credit note `row` `void` (`voided_at` now, the `reversal` ledger
 * entry that took its credit back, if any) and emits `credit_note.voided`, in `trx`. Returns
 * the note after (its hosted URL under `publicUrl`).
 */
export async function markCreditNoteVoid(
  trx: Transaction<Database>,
  clock: Clock,
  publicUrl: string,
  row: CreditNoteRow,
  reversalBalanceTransactionId: string | null,
): Promise<CreditNote> {
  const now = clock.now().toISOString();
  const set = {
    status: 'void' as const,
    voided_at: now,
    updated_at: now,
    reversal_balance_transaction_id: reversalBalanceTransactionId,
  };
  await trx.updateTable('credit_notes').set(set).where('id', '=', row.id).execute();
  const note = toCreditNote({ ...row, ...set }, publicUrl);
  await emitEvent(trx, clock, 'credit_note.voided', note);
  return note;
}

const creditNotesList = defineList({
  from: (db) => db.selectFrom('credit_notes'),
  select: (query) => query.selectAll(),
  sortable: CREDIT_NOTE_SORT_FIELDS,
  // The hosted URL depends on PUBLIC_URL, which the compiled list does not know: mapped by listCreditNotes.
  map: (rows) => rows,
});

/** GET /api/credit-notes filters: exact matches. */
export interface CreditNoteFilters {
  invoice_id?: string;
  customer_id?: string;
}

/**
 * A page of credit notes (SPEC §2 "Lists"), newest first by default; `publicUrl`
 * (PUBLIC_URL) builds each `hosted_credit_note_url`.
 */
export async function listCreditNotes(
  db: Kysely<Database>,
  publicUrl: string,
  params: ListParams,
  filters: CreditNoteFilters,
): Promise<Page<CreditNote>> {
  const page = await creditNotesList.page(db, params, {
    invoice_id: filters.invoice_id,
    customer_id: filters.customer_id,
  });
  return { data: page.data.map((row) => toCreditNote(row, publicUrl)), meta: page.meta };
}

/** Credit note `id` (its hosted URL under `publicUrl`). Throws 404 `not_found` for an unknown or malformed id. */
export async function getCreditNote(db: Kysely<Database>, publicUrl: string, id: string): Promise<CreditNote> {
  const row = await findCreditNoteRow(db, id);
  if (!row) throw new NotFoundError('credit note', id);
  return toCreditNote(row, publicUrl);
}

/** Forgets test clock `testClockId`'s credit notes and their number sequence (the clock is deleted, SPEC §11). */
export async function deleteTestClockCreditNotes(trx: Transaction<Database>, testClockId: string): Promise<void> {
  await trx.deleteFrom('credit_notes').where('test_clock_id', '=', testClockId).execute();
  await trx.deleteFrom('credit_note_numbers').where('prefix', '=', creditNotePrefix(testClockId)).execute();
}
