// The last stage of composing (SPEC §12, §14): the customer's credit balance pays what it can
// of the invoice's total, after taxes. It makes no line: the invoice shows it as applied_balance.
import { ComposeInputError } from './errors.ts';

/**
 * The credit `balance` (minor units, an integer ≥ 0) applied to an invoice of `total` (minor
 * units, signed): `applied_balance = min(balance, max(total, 0))` and `amount_due = max(total,
 * 0) − applied_balance`, which is total − applied_balance whenever total ≥ 0 and never below 0.
 * A negative total (a credit invoice, SPEC §13) owes 0 and takes no balance; turning it into
 * credit is the balance ledger's work (SPEC §14), not composing's. Throws
 * ComposeInputError for a negative or fractional balance.
 */
export function applyCredit(total: number, balance: number): { applied_balance: number; amount_due: number } {
  if (!Number.isSafeInteger(balance) || balance < 0) {
    throw new ComposeInputError(`a credit balance is an integer ≥ 0 in minor units, not ${balance}`);
  }
  const payable = Math.max(total, 0);
  const applied = Math.min(balance, payable);
  return { applied_balance: applied, amount_due: payable - applied };
}
