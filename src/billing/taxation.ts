// Which taxes an invoice applies (SPEC §14): the most specific non-empty list of tax rates —
// the subscription's, else its plan's, else the customer's, else DEFAULT_TAX_RATE_IDS — and
// whether the customer is taxed at all (`tax_exempt`). An archived rate keeps applying
// where it is attached (as Stripe's do); it can only not be attached anew.
import type { Kysely, Transaction } from 'kysely';
import { inList } from '../db/bulk.ts';
import type { Database } from '../db/database.ts';
import type { TaxExempt } from '../db/tables/customers.table.ts';
import type { TaxRateRow } from '../db/tables/tax-rates.table.ts';
import { findTaxRatesForInvoice, parseTaxRateIds } from '../modules/tax-rates/tax-rates.service.ts';
import type { ComposeTaxRate } from './compose/types.ts';

/** The lists of tax rate ids an invoice may take its rates from, most specific first. */
export interface TaxRateLists {
  subscription?: readonly string[];
  plan?: readonly string[];
  customer: readonly string[];
  defaults: readonly string[];
}

/** SPEC §14 precedence: the first non-empty list of subscription > plan > customer > defaults ([] when all are). */
export function applicableTaxRateIds(lists: TaxRateLists): readonly string[] {
  for (const list of [lists.subscription, lists.plan, lists.customer, lists.defaults]) {
    if (list !== undefined && list.length > 0) return list;
  }
  return [];
}

/** What the pipeline's taxes step reads (ComposeInput `tax_rates`, `customer.tax_exempt`). */
export interface InvoiceTaxes {
  tax_rates: ComposeTaxRate[];
  tax_exempt: TaxExempt;
}

/** Whose taxes: the customer, and the subscription and plan when the invoice bills one (their `tax_rate_ids` columns). */
export interface TaxedParty {
  customerId: string;
  subscriptionTaxRateIds?: string;
  planTaxRateIds?: string;
}

/**
 * The taxes of an invoice of `party` (SPEC §14): the rates of the most specific non-empty
 * list (applicableTaxRateIds; `defaults` is DEFAULT_TAX_RATE_IDS), archived or not, in the
 * list's order — a default id with no tax rate is left out — and the customer's
 * `tax_exempt` (`none` for a customer that no longer exists). Reads the customer's row and,
 * when some list is not empty, the rates.
 */
export async function invoiceTaxes(
  db: Kysely<Database> | Transaction<Database>,
  party: TaxedParty,
  defaults: readonly string[],
): Promise<InvoiceTaxes> {
  const customer = await db
    .selectFrom('customers')
    .select(['tax_rate_ids', 'tax_exempt'])
    .where('id', '=', party.customerId)
    .executeTakeFirst();
  const ids = taxRateIdsOf(party, customer, defaults);
  return toInvoiceTaxes(customer, await findTaxRatesForInvoice(db, ids));
}

/** The customer columns an invoice's taxes read. */
type TaxedCustomer = { tax_rate_ids: string; tax_exempt: TaxExempt } | undefined;

/** The rate ids `party`'s invoice applies (applicableTaxRateIds), `customer` its customer's row. */
function taxRateIdsOf(party: TaxedParty, customer: TaxedCustomer, defaults: readonly string[]): readonly string[] {
  return applicableTaxRateIds({
    subscription:
      party.subscriptionTaxRateIds === undefined ? undefined : parseTaxRateIds(party.subscriptionTaxRateIds),
    plan: party.planTaxRateIds === undefined ? undefined : parseTaxRateIds(party.planTaxRateIds),
    customer: customer === undefined ? [] : parseTaxRateIds(customer.tax_rate_ids),
    defaults,
  });
}

function toInvoiceTaxes(customer: TaxedCustomer, rows: readonly TaxRateRow[]): InvoiceTaxes {
  return {
    tax_exempt: customer?.tax_exempt ?? 'none',
    tax_rates: rows.map((row) => ({
      id: row.id,
      display_name: row.display_name,
      percentage_e4: Number(row.percentage_e4),
      inclusive: Boolean(row.inclusive),
    })),
  };
}

/**
 * invoiceTaxes for many invoices' `parties` at once, in order: the customers in one read and
 * every rate any of them applies in another (none when no list names one).
 */
export async function invoiceTaxesOf(
  db: Kysely<Database> | Transaction<Database>,
  parties: readonly TaxedParty[],
  defaults: readonly string[],
): Promise<InvoiceTaxes[]> {
  if (parties.length === 0) return [];
  const rows = await db
    .selectFrom('customers')
    .select(['id', 'tax_rate_ids', 'tax_exempt'])
    .where(inList(db, 'id', [...new Set(parties.map((party) => party.customerId))]))
    .execute();
  const customers = new Map(rows.map((row) => [row.id, row]));
  const lists = parties.map((party) => taxRateIdsOf(party, customers.get(party.customerId), defaults));
  const rates = new Map((await findTaxRatesForInvoice(db, [...new Set(lists.flat())])).map((rate) => [rate.id, rate]));
  return parties.map((party, i) =>
    toInvoiceTaxes(
      customers.get(party.customerId),
      lists[i]!.flatMap((id) => rates.get(id) ?? []),
    ),
  );
}
