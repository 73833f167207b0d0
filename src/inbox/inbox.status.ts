// The inbox row's life (SPEC §5 "Store, then process"), pure: which statuses a row can be in,
// which moves between them processing makes, and which rows still need processing.
import type { InboxStatus } from '../db/tables/provider-events.table.ts';

/**
 * Every move processing makes (the store writes `received`; nothing else writes a status).
 * `processed` and `ignored` are final. `held` (a refund waiting for its payment) moves when
 * the payment succeeds: applied, or `failed` when it cannot be used. `failed` moves again
 * only while a retry is due (`next_attempt_at` set); a retry may fail again.
 */
export const INBOX_TRANSITIONS: Readonly<Record<InboxStatus, readonly InboxStatus[]>> = {
  received: ['processed', 'ignored', 'held', 'failed'],
  held: ['processed', 'ignored', 'held', 'failed'],
  failed: ['processed', 'ignored', 'held', 'failed'],
  processed: [],
  ignored: [],
};

/** Statuses the retry worker claims once `next_attempt_at` has come (a `held` row waits for its payment instead). */
export const RETRIED_STATUSES = ['received', 'failed'] as const satisfies readonly InboxStatus[];

/** True when the table allows a row in `from` to move to `to`. */
export function canMove(from: InboxStatus, to: InboxStatus): boolean {
  return INBOX_TRANSITIONS[from].includes(to);
}

/**
 * True when a row still needs processing: never processed, a held refund being released,
 * or failed with a retry due. A failure without a retry (`next_attempt_at` null) is final:
 * a retry cannot help (an unusable event).
 */
export function needsProcessing(row: { status: InboxStatus; next_attempt_at: string | null }): boolean {
  if (row.status === 'failed') return row.next_attempt_at !== null;
  return INBOX_TRANSITIONS[row.status].length > 0;
}
