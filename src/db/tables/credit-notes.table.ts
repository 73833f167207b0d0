// Row shapes of `credit_notes` and `credit_note_numbers` (SPEC §14 "Credit notes"), written
// only by modules/credit-notes/credit-notes.records.ts.
import type { Selectable } from 'kysely';

export const CREDIT_NOTE_STATUSES = ['issued', 'void'] as const;
export type CreditNoteStatus = (typeof CREDIT_NOTE_STATUSES)[number];

/** Stripe's reasons for a credit note (POST /v1/credit_notes `reason`). */
export const CREDIT_NOTE_REASONS = ['duplicate', 'fraudulent', 'order_change', 'product_unsatisfactory'] as const;
export type CreditNoteReason = (typeof CREDIT_NOTE_REASONS)[number];

export interface CreditNotesTable {
  /** `cn_…`. */
  id: string;
  /** `CN-000001`, gap-free per sequence (credit_note_numbers); a test clock's `CN-<clock id>-000001`. */
  number: string;
  invoice_id: string;
  customer_id: string;
  /** ISO 4217, upper case: the invoice's. */
  currency: string;
  /** Minor units, > 0: pre_payment_amount + post_payment_amount. */
  amount: number;
  /** Minor units: what the note took off the invoice's `amount_due` (an open or uncollectible invoice). */
  pre_payment_amount: number;
  /** Minor units: what it returned after payment = refund + credit + out of band. */
  post_payment_amount: number;
  refund_amount: number;
  credit_amount: number;
  out_of_band_amount: number;
  reason: CreditNoteReason | null;
  memo: string | null;
  /** JSON array of CreditNoteLine (credit-notes.schemas.ts); empty when the note names no line. */
  lines: string;
  /** JSON array of CreditNoteRefund: the refunds this note asked for, one per payment. */
  refunds: string;
  /** The ledger entry (`cbtxn_…`, kind `credit_note`) of `credit_amount`; null when none. */
  balance_transaction_id: string | null;
  /** The ledger entry (kind `reversal`) the note's void made to take its credit back; null otherwise. */
  reversal_balance_transaction_id: string | null;
  status: CreditNoteStatus;
  /**
   * 32 random bytes, base64url: the secret part of `hosted_credit_note_url` (`/c/<token>`).
   * Always written (migration 0037 gave older notes theirs); the column is nullable only
   * because SQLite cannot add a NOT NULL column without a default.
   */
  hosted_token: string;
  /** Hex SHA-256 of the request's Idempotency-Key scope; null without a key. */
  request_key: string | null;
  /** The customer's test clock (`clock_…`); null: real time (SPEC §11). */
  test_clock_id: string | null;
  created_at: string;
  updated_at: string;
  voided_at: string | null;
}

/** One counter per sequence prefix (`CN`, `CN-<clock id>`): the last number issued. */
export interface CreditNoteNumbersTable {
  prefix: string;
  last_number: number;
}

export type CreditNoteRow = Selectable<CreditNotesTable>;
