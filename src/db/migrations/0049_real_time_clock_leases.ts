// The leases of provider calls made for a test clock's customers — a refund's `claimed_until`, a
// charge attempt's `locked_until` — end in real time (SPEC §11 "Calls in doubt"): the call takes
// real time however far an advance moves the clock. Rows written before were leased in the
// clock's time, which real time may never reach (a clock set in 2030) or has long passed while
// the call may still be running. Every such lease still held is set to end ten minutes after
// this migration, in real time: longer than any call then in flight (PROVIDER_TIMEOUT, 30 s by
// default), and short enough that an advance waiting on a dead caller's lease resumes soon.
import type { Kysely } from 'kysely';

/** How long after the migration the leases it rewrites end (ms, real time). */
export const REWRITTEN_LEASE_MS = 10 * 60_000;

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function up(db: Kysely<any>): Promise<void> {
  const until = new Date(Date.now() + REWRITTEN_LEASE_MS).toISOString();
  await db
    .updateTable('refunds')
    .set({ claimed_until: until })
    .where('test_clock_id', 'is not', null)
    .where('status', '=', 'pending')
    .where('provider_refund_id', 'is', null)
    .where('claimed_until', 'is not', null)
    .execute();
  await db
    .updateTable('invoice_payment_attempts')
    .set({ locked_until: until })
    .where('kind', '=', 'charge')
    .where('status', '=', 'pending')
    .where('locked_until', 'is not', null)
    .where('invoice_id', 'in', db.selectFrom('invoices').select('id').where('test_clock_id', 'is not', null))
    .execute();
}

// Nothing to undo: a real-time lease read as the clock's time only ends sooner or later.
export async function down(): Promise<void> {}
