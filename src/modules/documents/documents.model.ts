// What a document shows (SPEC §14 "Documents"), as data: the invoice, who sells, who buys,
// the locale and the tax summary. The hosted page and the PDF both render the one view built
// from it (documents.view.ts), so they cannot disagree. Fields another record owns (the
// buyer's address and tax ids, reverse charge, taxes by rate) are optional: whoever adds
// them to their record passes them here, one line each (invoiceDocument's callers).
import type { BusinessLogo } from '../../config.ts';
import { type DocumentLocale, documentLocale } from '../../shared/locales.ts';
import type { CreditNote } from '../credit-notes/credit-notes.records.ts';
import type { Invoice } from '../invoices/invoices.schemas.ts';

/** A postal address as SPEC §14 names its parts; every part optional. */
export interface PostalAddress {
  line1?: string | null;
  line2?: string | null;
  postal_code?: string | null;
  city?: string | null;
  state?: string | null;
  /** ISO 3166-1 alpha-2. */
  country?: string | null;
}

/** A tax id as customers hold them (`{type: eu_vat|gb_vat|…, value}`, SPEC §14). */
export interface TaxId {
  type: string;
  value: string;
}

/** Who sells: BUSINESS_NAME, BUSINESS_ADDRESS (lines), BUSINESS_TAX_ID. */
export interface Seller {
  name: string;
  addressLines: readonly string[];
  taxId: string | null;
  /** BUSINESS_LOGO_PATH's image, read at start-up; absent or null: none. */
  logo?: BusinessLogo | null;
}

/** Who the invoice is billed to (name may be absent); address and tax ids when the record has them. */
export interface Buyer {
  name: string | null;
  email: string;
  address?: PostalAddress | null;
  taxIds?: readonly TaxId[];
}

/** One tax rate's total on the invoice (minor units), as the taxes step computed it. */
export interface TaxSummary {
  name: string;
  /** 0–100, up to 4 decimals. */
  percentage: number;
  inclusive: boolean;
  amount: number;
}

/** The Pay button's form: where it posts (a path) and the provider's display name. */
export interface PayButton {
  action: string;
  provider: string;
}

/**
 * Everything one invoice's page or PDF shows. `buyer` undefined: the customer row is gone.
 * `taxes` absent: each tax line of the invoice is a row of its own. `reverseCharge`: no tax,
 * and the documents say so (customer `tax_exempt: reverse`). `pay` (the page only): a
 * provider can collect; the button shows on an `open` invoice with something remaining.
 */
export interface InvoiceDocument {
  invoice: Invoice;
  seller: Seller;
  buyer: Buyer | undefined;
  locale: DocumentLocale;
  reverseCharge?: boolean;
  taxes?: readonly TaxSummary[];
  pay?: PayButton;
}

/**
 * BUSINESS_ADDRESS as lines: the value split at literal `\n` sequences (an environment
 * variable holds one line), each trimmed, empty ones dropped; null or '' → none.
 */
export function addressLines(address: string | null): string[] {
  if (!address) return [];
  return address
    .split('\\n')
    .map((line) => line.trim())
    .filter(Boolean);
}

/** A customer as the documents read it: the customers row's columns, and those others will add. */
export interface DocumentCustomer extends Buyer {
  preferred_locale: string | null;
}

/** The business details from config (BUSINESS_NAME, BUSINESS_ADDRESS, BUSINESS_TAX_ID, BUSINESS_LOGO_PATH). */
export interface BusinessDetails {
  businessName: string;
  businessAddress: string | null;
  businessTaxId: string | null;
  businessLogo?: BusinessLogo | null;
}

/**
 * The document of `invoice` billed to `customer` (undefined: its row is gone; then `en`)
 * from `business`: the seller from config, the buyer and the locale from the customer
 * (preferred_locale, SPEC §14), reverse charge and taxes by rate from the invoice
 * (`reverse_charge`, `total_tax_amounts`). `extra`: the Pay button, or those two overridden.
 */
export function invoiceDocument(
  invoice: Invoice,
  customer: DocumentCustomer | undefined,
  business: BusinessDetails,
  extra: Pick<InvoiceDocument, 'reverseCharge' | 'taxes' | 'pay'> = {},
): InvoiceDocument {
  return {
    invoice,
    ...partiesOf(customer, business),
    // The invoice's own tax facts, as it was composed (names and percentages then, not now).
    reverseCharge: invoice.reverse_charge,
    ...(invoice.total_tax_amounts.length === 0
      ? {}
      : {
          taxes: invoice.total_tax_amounts.map((tax) => ({
            name: tax.display_name,
            percentage: tax.percentage,
            inclusive: tax.inclusive,
            amount: tax.amount,
          })),
        }),
    ...extra,
  };
}

/** Seller from config, buyer and locale from the customer (undefined: its row is gone; then `en`). */
function partiesOf(
  customer: DocumentCustomer | undefined,
  business: BusinessDetails,
): Pick<InvoiceDocument, 'seller' | 'buyer' | 'locale'> {
  return {
    seller: {
      name: business.businessName,
      addressLines: addressLines(business.businessAddress),
      taxId: business.businessTaxId,
      ...(business.businessLogo ? { logo: business.businessLogo } : {}),
    },
    buyer: customer && {
      name: customer.name,
      email: customer.email,
      ...(customer.address === undefined ? {} : { address: customer.address }),
      ...(customer.taxIds === undefined ? {} : { taxIds: customer.taxIds }),
    },
    locale: documentLocale(customer?.preferred_locale),
  };
}

/**
 * Everything a credit note's PDF shows (SPEC §14 "Credit notes"): the note, the number of the
 * invoice it credits (null: that invoice has none, which a finalized invoice always has), and
 * the parties and locale as the invoice's document has them.
 */
export interface CreditNoteDocument {
  creditNote: CreditNote;
  invoiceNumber: string | null;
  seller: Seller;
  buyer: Buyer | undefined;
  locale: DocumentLocale;
}

/** The document of `creditNote` (crediting invoice `invoiceNumber`) to `customer`, from `business`. */
export function creditNoteDocument(
  creditNote: CreditNote,
  invoiceNumber: string | null,
  customer: DocumentCustomer | undefined,
  business: BusinessDetails,
): CreditNoteDocument {
  return { creditNote, invoiceNumber, ...partiesOf(customer, business) };
}
