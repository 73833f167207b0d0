// createDeps(config): everything a request or job needs, as one plain object.
import type { Kysely } from 'kysely';
import type { Config } from './config.ts';
import { type DatabaseHandle, openDatabase } from './db/connect.ts';
import type { Database } from './db/database.ts';
import { migrateToLatest } from './db/migrate.ts';
import { hashKey } from './modules/api-keys/api-keys.keys.ts';
import { KeyUsageRecorder } from './modules/api-keys/api-keys.usage.ts';
import type { CallDeadlines } from './providers/provider-api.ts';
import { createProviderApis, type ProviderApis } from './providers/provider-apis.ts';
import { type Clock, systemClock } from './shared/clock.ts';
import { noticeClockReads } from './shared/clock-reads.ts';

export interface Deps {
  config: Readonly<Config>;
  db: Kysely<Database>;
  database: DatabaseHandle;
  clock: Clock;
  /** SHA-256 hashes of the bootstrap keys from API_KEYS. */
  bootstrapKeyHashes: ReadonlySet<string>;
  keyUsage: KeyUsageRecorder;
  /** Paystack and Stripe API clients, for the providers that have an API key (SPEC §10). */
  providers: ProviderApis;
  /** Flushes pending writes and closes the database. */
  close(): Promise<void>;
}

export interface DepsOptions {
  clock?: Clock;
  /** PostgreSQL schema to use (tests). */
  schema?: string;
  /** SQLite in memory: start from this serialized database (tests; see ConnectOptions). */
  sqliteImage?: Uint8Array;
  /** Run pending migrations before returning (default true). */
  migrate?: boolean;
  /** Where provider calls get their deadlines (tests with fake providers; default: real time). */
  providerDeadlines?: CallDeadlines;
}

/** Opens and (by default) migrates the database, and wires the shared services. */
export async function createDeps(config: Readonly<Config>, options: DepsOptions = {}): Promise<Deps> {
  const database = openDatabase(config.database, { schema: options.schema, sqliteImage: options.sqliteImage });
  try {
    if (options.migrate !== false) await migrateToLatest(database);
  } catch (error) {
    await database.close();
    throw error;
  }
  const keyUsage = new KeyUsageRecorder(database.db);
  const providers = createProviderApis(config, options.providerDeadlines);
  return {
    config,
    db: database.db,
    database,
    // Notes which request read it: the response cache keeps no response computed from "now".
    clock: noticeClockReads(options.clock ?? systemClock),
    bootstrapKeyHashes: new Set(config.apiKeys.map(hashKey)),
    keyUsage,
    providers,
    async close() {
      await keyUsage.flush().catch(() => {});
      await providers.close().catch(() => {});
      await database.close();
    },
  };
}
