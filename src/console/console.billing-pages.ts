// The console's billing lists and records (SPEC §16): invoices and subscriptions (keyset
// lists, filterable by status), meters (how each counts, which plans charge it) and credit
// notes (the split, the PDF, the hosted page; issue one from its invoice, void one). Issuing
// and voiding call billing/credit-notes.ts, as POST /api/credit-notes and …/void do.
import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../deps.ts';
import { ValidationError } from '../http/errors.ts';
import { createCreditNote, creditNoteRequestKey, voidCreditNote } from '../billing/credit-notes.ts';
import { getCreditNote, listCreditNotes } from '../modules/credit-notes/credit-notes.records.ts';
import { getCreditNotePdf } from '../modules/documents/documents.service.ts';
import * as invoices from '../modules/invoices/invoices.service.ts';
import { getMeter, listMeters } from '../modules/meters/meters.service.ts';
import { plansChargingMeter } from '../modules/plans/plans.service.ts';
import { listSubscriptions } from '../modules/subscriptions/subscriptions.service.ts';
import { CREDIT_NOTE_REASONS } from '../db/tables/credit-notes.table.ts';
import { INVOICE_STATUSES } from '../db/tables/invoices.table.ts';
import { SUBSCRIPTION_STATUSES } from '../db/tables/subscriptions.table.ts';
import { PDF_HEADERS } from '../routes/pdf-response.ts';
import {
  checkedId,
  CONSOLE_PREFIX,
  type ConsoleKit,
  type Form,
  type IdParams,
  keysetPage,
  linkTo,
  optionalText,
  wholeNumber,
} from './console.kit.ts';

type ListQuery = { Querystring: { status?: string; after?: string; invoice_id?: string } };

/** The largest amount a form takes, in minor units. */
const MAX_AMOUNT = Number.MAX_SAFE_INTEGER;

/** `path` of the console page of credit note `id`. */
const creditNotePath = (id: string) => `${CONSOLE_PREFIX}/credit-notes/${encodeURIComponent(id)}`;
/** `path` of the console page of invoice `id`. */
const invoicePath = (id: string) => `${CONSOLE_PREFIX}/invoices/${encodeURIComponent(id)}`;

/**
 * Registers the invoice, subscription, meter and credit note pages on `signedIn` (the
 * console's signed-in context: session, CSRF and read-only checks already applied).
 */
export async function registerBillingPages(signedIn: FastifyInstance, kit: ConsoleKit, deps: Deps): Promise<void> {
  const { db, config } = deps;
  const open = { config: { scope: 'public' as const, idempotency: false as const }, schema: { hide: true } };

  signedIn.get<ListQuery>('/invoices', open, async (request, reply) => {
    const status = INVOICE_STATUSES.find((value) => value === request.query.status);
    const list = await keysetPage(
      (params) => invoices.listInvoices(db, config.publicUrl, params, { status }),
      'created_at',
      request.query.after,
    );
    return kit.page(request, reply, 'invoices', 'Invoices', {
      invoices: list.data,
      statuses: INVOICE_STATUSES,
      status: status ?? '',
      next: list.next && linkTo(`${CONSOLE_PREFIX}/invoices`, { status, after: list.next }),
    });
  });

  signedIn.get<ListQuery>('/subscriptions', open, async (request, reply) => {
    const status = SUBSCRIPTION_STATUSES.find((value) => value === request.query.status);
    const list = await keysetPage(
      (params) => listSubscriptions(db, params, { status }),
      'created_at',
      request.query.after,
    );
    return kit.page(request, reply, 'subscriptions', 'Subscriptions', {
      subscriptions: list.data,
      statuses: SUBSCRIPTION_STATUSES,
      status: status ?? '',
      next: list.next && linkTo(`${CONSOLE_PREFIX}/subscriptions`, { status, after: list.next }),
    });
  });

  // Meters (SPEC §15): read-only; how each counts and which plans charge it.
  signedIn.get<ListQuery>('/meters', open, async (request, reply) => {
    const list = await keysetPage((params) => listMeters(db, params), 'created_at', request.query.after);
    return kit.page(request, reply, 'meters', 'Meters', {
      meters: list.data,
      next: list.next && linkTo(`${CONSOLE_PREFIX}/meters`, { after: list.next }),
    });
  });
  signedIn.get<IdParams>('/meters/:id', open, async (request, reply) => {
    const meter = await getMeter(db, checkedId(request.params.id));
    const plans = await plansChargingMeter(db, meter.id);
    return kit.page(request, reply, 'meter', `Meter ${meter.display_name}`, {
      meter,
      plans: plans.map((plan) => ({ plan, charges: plan.charges.filter((charge) => charge.meter_id === meter.id) })),
    });
  });

  // Credit notes (SPEC §14): the list (all, or one invoice's), a note, its PDF, void.
  signedIn.get<ListQuery>('/credit-notes', open, async (request, reply) => {
    const invoiceId = optionalText(request.query as Form, 'invoice_id', 64);
    const list = await keysetPage(
      (params) => listCreditNotes(db, config.publicUrl, params, { invoice_id: invoiceId }),
      'created_at',
      request.query.after,
    );
    return kit.page(request, reply, 'credit-notes', 'Credit notes', {
      notes: list.data,
      invoiceId,
      next: list.next && linkTo(`${CONSOLE_PREFIX}/credit-notes`, { invoice_id: invoiceId, after: list.next }),
    });
  });
  signedIn.get<IdParams>('/credit-notes/:id', open, async (request, reply) => {
    const note = await getCreditNote(db, config.publicUrl, checkedId(request.params.id));
    return kit.page(request, reply, 'credit-note', `Credit note ${note.number}`, { note });
  });
  signedIn.get<IdParams>('/credit-notes/:id/pdf', open, async (request, reply) => {
    const { filename, pdf } = await getCreditNotePdf(db, config, checkedId(request.params.id));
    return reply
      .code(200)
      .headers({ ...PDF_HEADERS, 'content-disposition': `inline; filename="${filename}"`, 'cache-control': 'no-store' })
      .send(pdf);
  });
  signedIn.post<IdParams>('/credit-notes/:id/void', open, async (request, reply) => {
    const id = checkedId(request.params.id);
    return kit.act(request, reply, 'credit_note.void', id, creditNotePath(id), 'credit_voided', () =>
      voidCreditNote(deps, id),
    );
  });

  // Issue a credit note from its invoice's page: an amount, and for a paid invoice how it goes
  // back (refund, credit balance, out of band). The form's own key makes a second submit of
  // the same form find the first note instead of issuing another.
  signedIn.post<IdParams>('/invoices/:id/credit-notes', open, async (request, reply) => {
    const id = checkedId(request.params.id);
    return kit.act(request, reply, 'credit_note.create', id, invoicePath(id), 'credited', async (session) => {
      const form = request.body as Form;
      const amount = wholeNumber(form, 'amount', MAX_AMOUNT);
      if (amount === undefined) throw new ValidationError('amount is required', 'amount');
      const reason = optionalText(form, 'reason', 40);
      if (reason !== undefined && !CREDIT_NOTE_REASONS.some((value) => value === reason)) {
        throw new ValidationError(`reason must be one of ${CREDIT_NOTE_REASONS.join(', ')}`, 'reason');
      }
      const split = {
        refund_amount: wholeNumber(form, 'refund_amount', MAX_AMOUNT, 0),
        credit_amount: wholeNumber(form, 'credit_amount', MAX_AMOUNT, 0),
        out_of_band_amount: wholeNumber(form, 'out_of_band_amount', MAX_AMOUNT, 0),
      };
      const memo = optionalText(form, 'memo', 500);
      const input = {
        invoice_id: id,
        amount,
        ...(reason === undefined ? {} : { reason: reason as (typeof CREDIT_NOTE_REASONS)[number] }),
        ...Object.fromEntries(Object.entries(split).filter(([, value]) => value !== undefined)),
        ...(memo === undefined ? {} : { memo }),
      };
      const formKey = optionalText(form, 'form_key', 64);
      const key = formKey
        ? creditNoteRequestKey({ principalId: session.id, key: formKey, fingerprint: JSON.stringify(input) })
        : null;
      return createCreditNote(deps, input, key);
    });
  });
}

/** What the invoice page adds for credit notes: the invoice's notes, the reasons, a fresh form key. */
export async function invoiceCreditNotes(deps: Deps, invoiceId: string) {
  const notes = await listCreditNotes(
    deps.db,
    deps.config.publicUrl,
    { page: 0, limit: 100, offset: 0, sortBy: 'created_at', sortOrder: 'desc' },
    { invoice_id: invoiceId },
  );
  return { creditNotes: notes.data, reasons: CREDIT_NOTE_REASONS, formKey: randomBytes(16).toString('base64url') };
}
