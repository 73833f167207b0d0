// Reading what a document needs (SPEC §14 "Documents"): the invoice, the customer it is
// billed to (also after the customer was deleted) and the business details from config, into
// an InvoiceDocument; and the PDF of an invoice for GET /api/invoices/{id}/pdf and
// /i/{token}.pdf. The only place the buyer's fields are read for documents: the customer's
// address and tax ids; the invoice's own `reverse_charge` and taxes per rate.
import type { Kysely } from 'kysely';
import type { Database } from '../../db/database.ts';
import type { InvoiceRow } from '../../db/tables/invoices.table.ts';
import { NotFoundError } from '../../http/errors.ts';
import { findCreditNoteRow, toCreditNote } from '../credit-notes/credit-notes.records.ts';
import type { CreditNoteRow } from '../../db/tables/credit-notes.table.ts';
import { getBilledCustomer } from '../customers/customers.service.ts';
import { findInvoiceRow, toInvoice } from '../invoices/invoices.lifecycle.ts';
import {
  type BusinessDetails,
  creditNoteDocument,
  type CreditNoteDocument,
  type DocumentCustomer,
  invoiceDocument,
  type InvoiceDocument,
  type PayButton,
  type PostalAddress,
  type TaxId,
} from './documents.model.ts';
import { renderCreditNotePdf, renderInvoicePdf } from './documents.pdf.ts';

/** Config a document reads: the business details and PUBLIC_URL (the hosted link). */
export interface DocumentConfig extends BusinessDetails {
  publicUrl: string;
}

/** A rendered PDF and the file name it is offered under (`INV-000042.pdf`; a draft: its id). */
export interface InvoicePdf {
  filename: string;
  pdf: Buffer;
}

/** The document of invoice `row`: its customer (deleted or not) and `config`'s business details. */
export async function loadInvoiceDocument(
  db: Kysely<Database>,
  config: DocumentConfig,
  row: InvoiceRow,
  pay?: PayButton,
): Promise<InvoiceDocument> {
  const invoice = toInvoice(row, config.publicUrl);
  return invoiceDocument(invoice, await buyerOf(db, row.customer_id), config, pay ? { pay } : {});
}

/** The customer `id` as documents read it (deleted or not); undefined when its row is gone. */
async function buyerOf(db: Kysely<Database>, id: string): Promise<DocumentCustomer | undefined> {
  const customer = await getBilledCustomer(db, id);
  return (
    customer && {
      ...customer,
      address: customer.address === null ? null : (JSON.parse(customer.address) as PostalAddress),
      taxIds: JSON.parse(customer.tax_ids) as TaxId[],
    }
  );
}

/** The PDF of invoice `row`, whatever its status (a draft is marked as one). */
export async function invoicePdfOf(db: Kysely<Database>, config: DocumentConfig, row: InvoiceRow): Promise<InvoicePdf> {
  const pdf = await renderInvoicePdf(await loadInvoiceDocument(db, config, row));
  return { filename: `${row.number ?? row.id}.pdf`, pdf };
}

/** The PDF of invoice `id` (any status). Throws 404 `not_found` for unknown or malformed ids. */
export async function getInvoicePdf(db: Kysely<Database>, config: DocumentConfig, id: string): Promise<InvoicePdf> {
  const row = await findInvoiceRow(db, id);
  if (!row) throw new NotFoundError('invoice', id);
  return invoicePdfOf(db, config, row);
}

/**
 * The document of credit note `row` (SPEC §14 "Credit notes"): the note, the number of the
 * invoice it credits, its customer (deleted or not) and `config`'s business details.
 */
export async function loadCreditNoteDocument(
  db: Kysely<Database>,
  config: DocumentConfig,
  row: CreditNoteRow,
): Promise<CreditNoteDocument> {
  const invoice = await findInvoiceRow(db, row.invoice_id);
  return creditNoteDocument(
    toCreditNote(row, config.publicUrl),
    invoice?.number ?? null,
    await buyerOf(db, row.customer_id),
    config,
  );
}

/** The PDF of credit note `row` (issued or void), in its customer's locale, named `<number>.pdf`. */
export async function creditNotePdfOf(
  db: Kysely<Database>,
  config: DocumentConfig,
  row: CreditNoteRow,
): Promise<InvoicePdf> {
  return {
    filename: `${row.number}.pdf`,
    pdf: await renderCreditNotePdf(await loadCreditNoteDocument(db, config, row)),
  };
}

/**
 * The PDF of credit note `id` (issued or void; SPEC §14 "Credit notes"), in its customer's
 * locale, named `<number>.pdf`. Throws 404 `not_found` for unknown or malformed ids.
 */
export async function getCreditNotePdf(db: Kysely<Database>, config: DocumentConfig, id: string): Promise<InvoicePdf> {
  const row = await findCreditNoteRow(db, id);
  if (!row) throw new NotFoundError('credit note', id);
  return creditNotePdfOf(db, config, row);
}
