// The composing pipeline of the billing core (SPEC §12): every invoice's lines come from ONE
// ordered list of pure steps, then the customer's credit is applied. Adding a step (a coupon
// kind, a tax engine) is one file in this folder and one line in PIPELINE.
import { applyCredit } from './credit.ts';
import { discounts } from './discounts.ts';
import { ComposeInputError } from './errors.ts';
import { fees } from './fees.ts';
import { prorations } from './prorations.ts';
import { toSafeAmount } from './rounding.ts';
import { taxes } from './taxes.ts';
import type { ComposedInvoice, ComposeInput, ComposeStep, InvoiceLineDraft, InvoiceLineKind } from './types.ts';
import { addsToTotal, type InvoiceTaxAmount } from '../../modules/invoices/invoices.schemas.ts';
import { e4ToPercentage } from '../../modules/tax-rates/tax-rates.percentage.ts';
import { usage } from './usage.ts';

/** The steps, in order: subscription fees → prorations → usage → discounts → taxes. */
export const PIPELINE: readonly ComposeStep[] = [fees, prorations, usage, discounts, taxes];

/** The kinds `subtotal` adds up: every line before discounts and taxes. */
const SUBTOTAL_KINDS: ReadonlySet<InvoiceLineKind> = new Set(['subscription', 'proration', 'usage', 'adjustment']);

/**
 * Composes the invoice of `input` (SPEC §12): runs `steps` (default PIPELINE) in order, each
 * over the lines of the one before, then applies the customer's credit balance (applyCredit).
 * Returns the lines in pipeline order, without ids (the invoice's writer assigns `il_…` ids),
 * and their totals in minor units: `subtotal` (subscription, proration, usage and adjustment
 * lines), `total_discount` (−the discount lines, ≥ 0), `total_tax` (the tax lines), `total`
 * (every line but inclusive tax lines: addsToTotal), `applied_balance` and `amount_due` (≥ 0),
 * `total_tax_amounts` (the tax lines per rate, SPEC §14) and `reverse_charge` (the customer
 * is reverse-charged). Each line was rounded once by its
 * step; totals are exact sums of those rounded lines. Pure: the same input gives the same
 * result. Throws AmountOutOfRangeError (400 `validation_error`) when a line or a total is
 * beyond Number.MAX_SAFE_INTEGER, and ComposeInputError when a line is in another currency than
 * `input.currency`, is not an integer amount, or is a discount that charges.
 */
export function composeInvoice(input: ComposeInput, steps: readonly ComposeStep[] = PIPELINE): ComposedInvoice {
  const lines = steps.reduce<readonly InvoiceLineDraft[]>((soFar, step) => step(soFar, input), []);
  let subtotal = 0n;
  let discount = 0n;
  let tax = 0n;
  let total = 0n;
  for (const line of lines) {
    checkLine(line, input.currency);
    const amount = BigInt(line.amount);
    if (SUBTOTAL_KINDS.has(line.kind)) subtotal += amount;
    else if (line.kind === 'discount') discount += amount;
    else tax += amount;
    if (addsToTotal(line)) total += amount;
  }
  const totalAmount = toSafeAmount(total, 'the invoice total');
  return {
    lines,
    subtotal: toSafeAmount(subtotal, 'the invoice subtotal'),
    total_discount: toSafeAmount(-discount, 'the invoice discount'),
    total_tax: toSafeAmount(tax, 'the invoice tax'),
    total_tax_amounts: taxAmounts(lines, input),
    reverse_charge: input.customer.tax_exempt === 'reverse',
    total: totalAmount,
    ...applyCredit(totalAmount, input.customer.balance),
  };
}

/**
 * The tax lines of `lines` summed per rate, in the order of `input.tax_rates`, with each
 * rate's name, percentage and inclusiveness as composed (Stripe's `total_tax_amounts`).
 */
function taxAmounts(lines: readonly InvoiceLineDraft[], input: ComposeInput): InvoiceTaxAmount[] {
  const amounts: InvoiceTaxAmount[] = [];
  for (const rate of input.tax_rates) {
    const own = lines.filter((line) => line.kind === 'tax' && line.tax_rate_id === rate.id);
    if (own.length === 0) continue;
    amounts.push({
      tax_rate_id: rate.id,
      display_name: rate.display_name,
      percentage: e4ToPercentage(rate.percentage_e4),
      inclusive: rate.inclusive,
      amount: toSafeAmount(
        own.reduce((sum, line) => sum + BigInt(line.amount), 0n),
        `the tax of ${rate.display_name}`,
      ),
    });
  }
  return amounts;
}

/** Throws unless `line` is billable in `currency`: a safe integer amount, a discount ≤ 0. */
function checkLine(line: InvoiceLineDraft, currency: string): void {
  if (line.currency !== currency) {
    throw new ComposeInputError(`line "${line.description}" is in ${line.currency}, the invoice in ${currency}`);
  }
  if (!Number.isInteger(line.amount)) {
    throw new ComposeInputError(`line "${line.description}" has ${line.amount}: amounts are rounded minor units`);
  }
  toSafeAmount(BigInt(line.amount), `line "${line.description}"`);
  if (line.kind === 'discount' && line.amount > 0) {
    throw new ComposeInputError(`discount line "${line.description}" charges ${line.amount}: a discount is ≤ 0`);
  }
}
