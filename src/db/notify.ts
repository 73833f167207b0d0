// PostgreSQL NOTIFY from inside a transaction: delivered at commit (never for a rollback) to
// every session LISTENing on the channel, other processes included.
import { sql, type Transaction } from 'kysely';
import type { Database } from './database.ts';
import { sendWithNextStatement } from './pg-traffic.ts';

/**
 * PostgreSQL: NOTIFYs the channel `prefix` + the session's schema (one channel per schema:
 * tenants and tests may share a database) when `trx` commits, with an empty payload. Its
 * answer is empty, so it is written in front of the transaction's next statement
 * (pg-traffic.ts). The caller checks the dialect; the channel name is a bound value.
 */
export async function notifyAtCommit(trx: Transaction<Database>, prefix: string): Promise<void> {
  await sendWithNextStatement(trx, sql`select pg_notify(${prefix} || current_schema(), ${''})`);
}
