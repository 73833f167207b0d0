// A customer's credit balance transaction (SPEC §14) and the manual adjustment's body, defined
// once: these TypeBox schemas validate, serialize and document the routes and the
// `customer.balance_changed` event; `BalanceTransaction` is their static type.
import Type, { type Static } from 'typebox';
import { Nullable, pageOf, StringEnum, timestamp } from '../../http/schemas.ts';
import { BALANCE_TRANSACTION_KINDS } from '../../db/tables/balances.table.ts';

export const BALANCE_TRANSACTION_SORT_FIELDS = ['created_at', 'amount'] as const;
/** The largest amount one manual adjustment moves (minor units), as a plan's price is bounded. */
export const MAX_ADJUSTMENT = 1_000_000_000_000;

export const balanceTransactionSchema = Type.Object(
  {
    id: Type.String({ examples: ['cbtxn_01JD3Q7Z8X9Y0A1B2C3D4E5F6G'] }),
    customer_id: Type.String(),
    type: StringEnum(BALANCE_TRANSACTION_KINDS, {
      description:
        '`adjustment` (by hand, POST), `overpayment` (a payment beyond its invoice), `applied_to_invoice` (credit an invoice took), `credit_note`, `reversal`',
    }),
    amount: Type.Integer({
      description: 'Minor units, signed, never 0: credit given is positive, credit used negative',
    }),
    currency: Type.String({ description: 'ISO 4217, upper case: each currency is its own balance' }),
    description: Nullable(Type.String({ description: 'Why, for a manual adjustment' })),
    invoice_id: Nullable(Type.String({ description: 'The invoice the credit came from or went to' })),
    payment_id: Nullable(Type.String({ description: 'The payment whose surplus it is (`overpayment`)' })),
    created_at: timestamp,
  },
  {
    $id: 'BalanceTransaction',
    description:
      "One movement of a customer's credit balance (SPEC §14): the balance in a currency is the sum of its transactions, never below 0.",
    examples: [
      {
        id: 'cbtxn_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
        customer_id: 'cus_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
        type: 'adjustment',
        amount: 2500,
        currency: 'NGN',
        description: 'Goodwill credit for the outage of 14 Jan',
        invoice_id: null,
        payment_id: null,
        created_at: '2026-01-15T10:00:00.000Z',
      },
    ],
  },
);

export const balanceTransactionListSchema = pageOf('BalanceTransactionList', balanceTransactionSchema);

export type BalanceTransaction = Static<typeof balanceTransactionSchema>;

export const createAdjustmentBody = Type.Object(
  {
    amount: Type.Integer({
      minimum: -MAX_ADJUSTMENT,
      maximum: MAX_ADJUSTMENT,
      // Not 0: the service says so in a sentence (a `not` schema could only say "invalid").
      description: 'Minor units, signed, not 0: positive gives credit, negative takes it (never below a balance of 0)',
      examples: [2500],
    }),
    // No `pattern`: the service checks ISO 4217 and says so, as for plans.
    currency: Type.String({ minLength: 3, maxLength: 3, description: 'ISO 4217, upper case', examples: ['NGN'] }),
    description: Type.String({ minLength: 1, maxLength: 500, examples: ['Goodwill credit for the outage of 14 Jan'] }),
  },
  { additionalProperties: false, examples: [{ amount: 2500, currency: 'NGN', description: 'Goodwill credit' }] },
);

export type CreateAdjustmentInput = Static<typeof createAdjustmentBody>;
