// Column types per dialect for migrations: PostgreSQL gets native types, SQLite their
// closest storage class. Timestamps are ISO 8601 text on SQLite (they sort correctly).
import { type Kysely, PostgresAdapter } from 'kysely';

export interface ColumnTypes {
  timestamp: 'timestamptz' | 'text';
  boolean: 'boolean' | 'integer';
  bigint: 'bigint' | 'integer';
}

/** True when `db` talks to PostgreSQL. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations run against an untyped schema
export function isPostgres(db: Kysely<any>): boolean {
  return db.getExecutor().adapter instanceof PostgresAdapter;
}

/** The column types to use on `db`'s dialect. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations run against an untyped schema
export function columnTypes(db: Kysely<any>): ColumnTypes {
  return isPostgres(db)
    ? { timestamp: 'timestamptz', boolean: 'boolean', bigint: 'bigint' }
    : { timestamp: 'text', boolean: 'integer', bigint: 'integer' };
}
