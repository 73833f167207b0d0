// The credit note resource (SPEC §14 "Credit notes"), defined once: these TypeBox schemas
// validate, serialize and document the routes and the `credit_note.*` events.
import Type, { type Static } from 'typebox';
import { Nullable, nullableTimestamp, pageOf, ref, StringEnum, timestamp } from '../../http/schemas.ts';
import { CREDIT_NOTE_REASONS, CREDIT_NOTE_STATUSES } from '../../db/tables/credit-notes.table.ts';

export const CREDIT_NOTE_SORT_FIELDS = ['created_at', 'amount'] as const;

const minorUnits = (description: string) =>
  Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description: `${description} (minor units)` });

/** One invoice line a credit note credits (Stripe's credit note line of type `invoice_line_item`). */
export const creditNoteLineSchema = Type.Object(
  {
    id: Type.String({ examples: ['cnli_01JD3Q7Z8X9Y0A1B2C3D4E5F6G'] }),
    invoice_line_id: Type.String({ description: 'The invoice line (`il_…`) credited' }),
    description: Type.String({ description: "The invoice line's description" }),
    amount: minorUnits('How much of the line is credited'),
  },
  {
    $id: 'CreditNoteLine',
    description: 'An invoice line a credit note credits.',
    examples: [
      {
        id: 'cnli_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
        invoice_line_id: 'il_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
        description: 'Pro (monthly) × 1, 15 Jan 2026 – 15 Feb 2026',
        amount: 2500,
      },
    ],
  },
);
export type CreditNoteLine = Static<typeof creditNoteLineSchema>;

/** A refund a credit note asked for: one per payment of the invoice it was spread over. */
export const creditNoteRefundSchema = Type.Object(
  {
    refund_id: Type.String({ description: 'The refund (`re_…`): GET /api/refunds/{id} shows its status' }),
    payment_id: Type.String(),
    amount: minorUnits('Asked of the provider on that payment'),
  },
  {
    $id: 'CreditNoteRefund',
    description: 'A refund of a payment of the invoice, asked for by the credit note.',
    examples: [
      { refund_id: 're_01JD3Q7Z8X9Y0A1B2C3D4E5F6G', payment_id: 'pay_01JD3Q7Z8X9Y0A1B2C3D4E5F6G', amount: 3000 },
    ],
  },
);
export type CreditNoteRefund = Static<typeof creditNoteRefundSchema>;

const EXAMPLE = {
  id: 'cn_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
  number: 'CN-000007',
  invoice_id: 'inv_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
  customer_id: 'cus_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
  currency: 'NGN',
  amount: 10000,
  pre_payment_amount: 0,
  post_payment_amount: 10000,
  refund_amount: 3000,
  credit_amount: 5000,
  out_of_band_amount: 2000,
  reason: 'product_unsatisfactory',
  memo: 'Two days of outage',
  lines: [],
  refunds: [{ refund_id: 're_01JD3Q7Z8X9Y0A1B2C3D4E5F6G', payment_id: 'pay_01JD3Q7Z8X9Y0A1B2C3D4E5F6G', amount: 3000 }],
  balance_transaction_id: 'cbtxn_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
  reversal_balance_transaction_id: null,
  status: 'issued',
  hosted_credit_note_url: 'https://billing.example.com/c/Xk2-9wEvLkK9hxX0Yb1cZ2d3e4f5g6h7i8j9k0l1m2n',
  created_at: '2026-02-01T10:00:00.000Z',
  voided_at: null,
};

/** A credit note as the API and the `credit_note.*` events show it (SPEC §14). */
export const creditNoteSchema = Type.Object(
  {
    id: Type.String({ examples: ['cn_01JD3Q7Z8X9Y0A1B2C3D4E5F6G'] }),
    number: Type.String({
      description:
        "`CN-000001`: gap-free, unique across instances (a test clock customer's notes: `CN-<clock id>-000001`)",
    }),
    invoice_id: Type.String(),
    customer_id: Type.String(),
    currency: Type.String({ description: "ISO 4217, upper case: the invoice's" }),
    amount: minorUnits('The whole credit: pre_payment_amount + post_payment_amount'),
    pre_payment_amount: minorUnits("Taken off the invoice's amount_due (an open or uncollectible invoice)"),
    post_payment_amount: minorUnits(
      'Given back after payment (a paid invoice): refund_amount + credit_amount + out_of_band_amount',
    ),
    refund_amount: minorUnits('Refunded through the payment provider, exactly once (see `refunds`)'),
    credit_amount: minorUnits("Added to the customer's credit balance (ledger kind `credit_note`)"),
    out_of_band_amount: minorUnits('Returned outside the service (cash, bank transfer): recorded only'),
    reason: Nullable(StringEnum(CREDIT_NOTE_REASONS)),
    memo: Nullable(Type.String()),
    lines: Type.Array(ref(creditNoteLineSchema), {
      description: 'The invoice lines credited; empty when the note was for an amount',
    }),
    refunds: Type.Array(ref(creditNoteRefundSchema), {
      description: 'The refunds asked for `refund_amount`, one per payment, oldest payment first',
    }),
    balance_transaction_id: Nullable(
      Type.String({
        description: 'The ledger entry (`cbtxn_…`, kind `credit_note`) of `credit_amount`; null when none',
      }),
    ),
    reversal_balance_transaction_id: Nullable(
      Type.String({
        description:
          'The ledger entry (`cbtxn_…`, kind `reversal`) that took the credit back when the note was voided; null otherwise',
      }),
    ),
    status: StringEnum(CREDIT_NOTE_STATUSES),
    hosted_credit_note_url: Type.String({
      description:
        "The credit note's public page (`<PUBLIC_URL>/c/<token>`, an unguessable token), in the customer's `preferred_locale`; the same URL + `.pdf` is its PDF",
    }),
    created_at: timestamp,
    voided_at: nullableTimestamp,
  },
  {
    $id: 'CreditNote',
    description:
      'A correction of a finalized invoice (SPEC §14): before payment it lowers what is due; after payment it is refunded, credited to the customer or settled out of band.',
    examples: [EXAMPLE],
  },
);
export type CreditNote = Static<typeof creditNoteSchema>;

export const creditNoteListSchema = pageOf('CreditNoteList', creditNoteSchema);

const amountIn = (description: string) =>
  Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description: `${description} (minor units)` });

/** POST /api/credit-notes. */
export const createCreditNoteBody = Type.Object(
  {
    invoice_id: Type.String({ minLength: 1, maxLength: 64, description: 'The finalized invoice (`inv_…`) corrected' }),
    amount: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: Number.MAX_SAFE_INTEGER,
        description: 'The credit (minor units); give `amount` or `lines`, not both',
      }),
    ),
    lines: Type.Optional(
      Type.Array(
        Type.Object(
          {
            invoice_line_id: Type.String({ minLength: 1, maxLength: 64 }),
            amount: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: 'Minor units' }),
          },
          { additionalProperties: false },
        ),
        {
          minItems: 1,
          maxItems: 100,
          description: 'Invoice lines credited, each at most what is left of it; the note is their sum',
        },
      ),
    ),
    reason: Type.Optional(StringEnum(CREDIT_NOTE_REASONS)),
    refund_amount: Type.Optional(amountIn('Paid invoice: refunded through the provider')),
    credit_amount: Type.Optional(amountIn("Paid invoice: added to the customer's credit balance")),
    out_of_band_amount: Type.Optional(amountIn('Paid invoice: returned outside the service, recorded only')),
    memo: Type.Optional(Type.String({ minLength: 1, maxLength: 500, pattern: '^[^\\u0000]*$' })),
  },
  {
    additionalProperties: false,
    examples: [
      {
        invoice_id: 'inv_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
        amount: 10000,
        reason: 'product_unsatisfactory',
        refund_amount: 3000,
        credit_amount: 5000,
        out_of_band_amount: 2000,
      },
    ],
  },
);
export type CreateCreditNoteInput = Static<typeof createCreditNoteBody>;
