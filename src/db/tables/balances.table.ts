// Row shape of `customer_balance_transactions` (SPEC §14): the append-only credit ledger of
// each customer, per currency. The balance is the sum of the amounts, always.
import type { Selectable } from 'kysely';

/** Why the balance moved (SPEC §14). */
export const BALANCE_TRANSACTION_KINDS = [
  'overpayment',
  'applied_to_invoice',
  'adjustment',
  'credit_note',
  'reversal',
] as const;
export type BalanceTransactionKind = (typeof BALANCE_TRANSACTION_KINDS)[number];

export interface CustomerBalanceTransactionsTable {
  /** `cbtxn_…`. */
  id: string;
  customer_id: string;
  /** ISO 4217, upper case: each currency is its own balance. */
  currency: string;
  /** Minor units, signed, never 0: credit given is positive, credit used negative. */
  amount: number;
  kind: BalanceTransactionKind;
  /** The invoice the credit came from or went to; null for none. */
  invoice_id: string | null;
  /** The payment whose surplus it is (`overpayment`); null for none. */
  payment_id: string | null;
  /** Why the balance moved, as a manual adjustment's author wrote it; null for the others. */
  description: string | null;
  created_at: string;
  /** The test clock (`clock_…`) of the customer; null: real time (SPEC §11). */
  test_clock_id: string | null;
}

export type CustomerBalanceTransactionRow = Selectable<CustomerBalanceTransactionsTable>;
