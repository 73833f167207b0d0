// The composing pipeline's two failures (SPEC §12): an amount too large to bill exactly, which
// the client can act on (a smaller quantity or price), and a line no step should have made.
import { AppError } from '../../http/errors.ts';

/**
 * An amount (a line, a product, a total; minor units) beyond Number.MAX_SAFE_INTEGER: above
 * it integers lose exactness, so the invoice is refused rather than rounded twice. A
 * `validation_error` (400) when a request causes it.
 */
export class AmountOutOfRangeError extends AppError {
  /** The amount refused, exactly. */
  readonly amount: bigint;
  constructor(what: string, amount: bigint) {
    super(
      'validation_error',
      `${what} (${amount} minor units) exceeds ${Number.MAX_SAFE_INTEGER}, the most an invoice can bill`,
    );
    this.name = 'AmountOutOfRangeError';
    this.amount = amount;
  }
}

/** A line or an input the pipeline cannot bill: another currency, an unrounded amount, a discount that charges. A defect of the caller or a step. */
export class ComposeInputError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ComposeInputError';
  }
}
