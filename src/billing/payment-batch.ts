// What a batch of provider events reads before its events run (SPEC §5): the payments its
// reports name (locked), their payers' customers by email and whether each payer's reported
// card is saved — one statement each for the whole batch instead of one per event, handed to
// recordPaymentEvent as explicit answers (ProcessingContext.batch). An answer is given only
// where it stays true while the batch's events run: a payment only to the one event of the
// batch that names it (or any reference it is an alias of), and only in a batch without a
// link (a link re-keys payments); a customer or a saved card always (a negative answer only
// leads to the insert that is already safe against a row made meanwhile: ON CONFLICT).
import type { Transaction } from 'kysely';
import type { Database } from '../db/database.ts';
import { isValidEmail, normalizeEmail } from '../modules/customers/customers.email.ts';
import { findPayersByEmail, type PayerWanted } from '../modules/payment-methods/payment-methods.ts';
import {
  type LockedReference,
  lockPaymentsByReferences,
  referenceKey,
} from '../modules/payments/payments.references.ts';
import type { ProviderEvent } from '../providers/provider.ts';
import { isProviderName } from '../shared/provider-names.ts';

/** One event of a batch, as read from its inbox row. */
export interface BatchEvent {
  provider: string;
  event: ProviderEvent;
}

/** The answers a batch read before its events run (see the header). */
export interface PaymentBatch {
  /**
   * The payment `provider`/`reference` locked as lockPaymentReference would answer — once:
   * a second call answers undefined (the caller then reads it itself). Undefined too for a
   * reference the batch could not answer for.
   */
  takePayment(provider: string, reference: string): LockedReference | undefined;
  /** The live customer's id with this normalized email, null when there is none; undefined: not read. */
  customerByEmail(emailNormalized: string): string | null | undefined;
  /** Whether `customerId` has a live method of `provider` with `fingerprint`; undefined: not read. */
  methodSaved(customerId: string, provider: string, fingerprint: string): boolean | undefined;
  /**
   * The references of the payments takePayment answers for (canonical ones): what is held
   * for them (the inbox's held refunds) can be read for the batch too, under the same locks.
   */
  readonly paymentReferences: readonly { provider: string; reference: string }[];
}

/** A batch that answers nothing (every event reads for itself). */
export const NO_BATCH: PaymentBatch = {
  takePayment: () => undefined,
  customerByEmail: () => undefined,
  methodSaved: () => undefined,
  paymentReferences: [],
};

type ReportEvent = Extract<ProviderEvent, { kind: 'payment_succeeded' | 'payment_failed' }>;

function isReport(event: ProviderEvent): event is ReportEvent {
  return event.kind === 'payment_succeeded' || event.kind === 'payment_failed';
}

/** The references an event reads or writes (a report's, a refund's payment, both of a link). */
export function referencesOf({ provider, event }: BatchEvent): { provider: string; reference: string }[] {
  if (isReport(event)) return [{ provider, reference: event.payment.reference }];
  if (event.kind === 'refunds') return [{ provider, reference: event.paymentReference }];
  if (event.kind === 'payment_linked') {
    return [
      { provider, reference: event.reference },
      { provider, reference: event.canonicalReference },
    ];
  }
  return [];
}

/**
 * Reads, for `events` (the batch's events in processing order), what their payment reports
 * will ask for, in at most two statements: the payments (lockPaymentsByReferences; on
 * PostgreSQL the caller must hold the advisory locks of every reference the events name and
 * of their known canonical ones — lockReferences — before calling) and the payers
 * (findPayersByEmail). Returns NO_BATCH's answers where nothing was read. Errors: the
 * database's.
 */
export async function loadPaymentBatch(
  trx: Transaction<Database>,
  events: readonly BatchEvent[],
): Promise<PaymentBatch> {
  const reports = events.filter((item) => isReport(item.event)) as { provider: string; event: ReportEvent }[];
  if (reports.length === 0) return NO_BATCH;

  const payments = new Map<string, LockedReference>();
  const paymentReferences: { provider: string; reference: string }[] = [];
  // A link re-keys payments and makes new aliases while the batch runs: its batch reads
  // payments event by event.
  if (!events.some((item) => item.event.kind === 'payment_linked')) {
    const named = events.flatMap(referencesOf);
    const found = await lockPaymentsByReferences(trx, named);
    // How many events of the batch touch each payment (named directly or by an alias).
    const touches = new Map<string, number>();
    for (const { provider, reference } of named) {
      const canonical = found.get(referenceKey(provider, reference))?.aliasOf ?? reference;
      const key = referenceKey(provider, canonical);
      touches.set(key, (touches.get(key) ?? 0) + 1);
    }
    for (const { provider, event } of reports) {
      const key = referenceKey(provider, event.payment.reference);
      const answer = found.get(key);
      if (!answer?.locked || touches.get(key) !== 1) continue;
      payments.set(key, answer.locked);
      paymentReferences.push({ provider, reference: answer.locked.canonical });
    }
  }

  const wanted: PayerWanted[] = [];
  for (const { provider, event } of reports) {
    const { email, method } = event.payment;
    if (email === null || !isValidEmail(email) || !isProviderName(provider)) continue;
    wanted.push({ emailNormalized: normalizeEmail(email), provider, fingerprint: method?.fingerprint ?? null });
  }
  const customers = new Map<string, string | null>(wanted.map((payer) => [payer.emailNormalized, null]));
  const methods = new Map<string, boolean>();
  for (const payer of await findPayersByEmail(trx, wanted)) {
    customers.set(payer.emailNormalized, payer.customerId);
    if (payer.fingerprint !== null)
      methods.set(methodKey(payer.customerId, payer.provider, payer.fingerprint), payer.saved);
  }

  return {
    takePayment(provider, reference) {
      const key = referenceKey(provider, reference);
      const answer = payments.get(key);
      payments.delete(key);
      return answer;
    },
    customerByEmail: (emailNormalized) => customers.get(emailNormalized),
    methodSaved: (customerId, provider, fingerprint) => methods.get(methodKey(customerId, provider, fingerprint)),
    paymentReferences,
  };
}

function methodKey(customerId: string, provider: string, fingerprint: string): string {
  return `${customerId}\u0000${provider}\u0000${fingerprint}`;
}
