// The invoice state machine (SPEC §9) as ONE table: state × event → next state and the topic
// that records it. Every status change goes through `nextInvoiceStatus`; no handler writes a
// status directly. Pure: no database, no clock. An invoice is issued final (`open`), or — a
// renewal with usage or prorations (SPEC §12 "Drafts") — `draft`, finalized later.
import type { Topic } from '../events/events.topics.ts';
import { INVOICE_STATUSES, type InvoiceStatus } from '../../db/tables/invoices.table.ts';

export { INVOICE_STATUSES, type InvoiceStatus };

export const INVOICE_EVENTS = [
  /** A draft's INVOICE_FINALIZE_DELAY passed (the worker), or POST …/finalize: numbered, collected. */
  'finalize',
  /** Payments settled the whole amount due (`amount_remaining` reached 0). */
  'paid',
  /** POST …/void. */
  'void',
  /** POST …/mark-uncollectible, or dunning's final action `cancel`. */
  'mark_uncollectible',
] as const;
export type InvoiceEvent = (typeof INVOICE_EVENTS)[number];

export interface InvoiceTransition {
  to: InvoiceStatus;
  topic: Topic;
}

const paid: InvoiceTransition = { to: 'paid', topic: 'invoice.paid' };
const voided: InvoiceTransition = { to: 'void', topic: 'invoice.voided' };

/** The whole state machine. A missing entry means the event is not allowed in that state. */
export const INVOICE_TRANSITIONS: Readonly<Record<InvoiceStatus, Partial<Record<InvoiceEvent, InvoiceTransition>>>> = {
  // Never paid, charged or dunned (not payable): it has no number yet, and voiding it takes none.
  draft: {
    finalize: { to: 'open', topic: 'invoice.finalized' },
    void: voided,
  },
  open: {
    paid,
    void: voided,
    mark_uncollectible: { to: 'uncollectible', topic: 'invoice.marked_uncollectible' },
  },
  uncollectible: { paid, void: voided },
  paid: {},
  void: {},
};

/** The transition for `event` in `status`, or undefined when the table forbids it. */
export function nextInvoiceStatus(status: InvoiceStatus, event: InvoiceEvent): InvoiceTransition | undefined {
  return INVOICE_TRANSITIONS[status][event];
}

/** True for the statuses a payment may still settle (SPEC §9: open and uncollectible; never a draft). */
export function isPayable(status: InvoiceStatus): boolean {
  return status === 'open' || status === 'uncollectible';
}
