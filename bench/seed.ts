// Bench seeding: creates a database with the project's own schema (openDatabase +
// migrateToLatest), then bulk-inserts realistic customers directly (node:sqlite, or pg with
// unnest() batches on PostgreSQL), in one transaction, and sets `row_counts` so `meta.total`
// matches without counting the table.
import { DatabaseSync, type StatementSync } from 'node:sqlite';
import pg from 'pg';
import { openDatabase } from '../src/db/connect.ts';
import { migrateToLatest } from '../src/db/migrate.ts';
import { normalizeEmail } from '../src/modules/customers/customers.email.ts';
import { newId } from '../src/shared/ids.ts';

/** Rows per multi-row INSERT: 8 columns × 500 rows stays far below SQLite's 32,766 bind limit. */
const ROWS_PER_INSERT = 500;
const COLUMNS = [
  'id',
  'email',
  'email_normalized',
  'name',
  'phone',
  'metadata',
  'created_at',
  'updated_at',
  'deleted_at',
] as const;
/** Customers are created over the two years before the seed runs. */
const SPAN_MS = 2 * 365 * 86_400_000;

const FIRST_NAMES = [
  'Ada',
  'Chinedu',
  'Grace',
  'Tunde',
  'Amara',
  'Kofi',
  'Zainab',
  'Emeka',
  'Ngozi',
  'Yusuf',
  'Fatima',
  'Olu',
  'Maria',
  'John',
  'Aisha',
  'Ken',
];
const LAST_NAMES = [
  'Lovelace',
  'Okafor',
  'Hopper',
  'Bakare',
  'Nwosu',
  'Mensah',
  'Bello',
  'Eze',
  'Adeyemi',
  'Ibrahim',
  'Garcia',
  'Smith',
  'Musa',
  'Obi',
  'Diallo',
  'Thompson',
];
const DOMAINS = ['example.com', 'example.org', 'mail.example.net', 'corp.example.io'];

export interface SeedResult {
  /** Customers inserted (and the value written to `row_counts`). */
  count: number;
  /** Up to `sampleSize` ids drawn uniformly from the inserted rows, for by-id requests. */
  sampleIds: string[];
  /** Wall time of the insert, index build and checkpoint (schema creation excluded), in ms. */
  insertMs: number;
}

/** mulberry32: a tiny seeded PRNG so every bench run inserts the same shape of data. */
function prng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

function pick<T>(items: readonly T[], random: () => number): T {
  return items[Math.floor(random() * items.length)]!;
}

/** One customer row: values in COLUMNS order. */
type CustomerValues = (string | null)[];

/**
 * Yields `count` live customers in COLUMNS order, created in time order over the last two
 * years (ids from `newId('customer')`, so id order matches creation order), with unique
 * emails; the same shape every run (seeded PRNG). Keeps in `sampleIds` up to `sampleSize`
 * ids drawn uniformly from all rows.
 */
function* customerRows(count: number, sampleIds: string[], sampleSize: number): Generator<CustomerValues> {
  const random = prng(0x5eed);
  const start = Date.now() - SPAN_MS;
  const step = SPAN_MS / Math.max(count, 1);
  for (let i = 0; i < count; i += 1) {
    const id = newId('customer');
    // Reservoir sampling: every row has the same chance of being in the sample.
    if (sampleIds.length < sampleSize) sampleIds.push(id);
    else {
      const slot = Math.floor(random() * (i + 1));
      if (slot < sampleSize) sampleIds[slot] = id;
    }
    const first = pick(FIRST_NAMES, random);
    const last = pick(LAST_NAMES, random);
    const createdMs = start + i * step + Math.floor(random() * step);
    const updatedMs = random() < 0.2 ? createdMs + Math.floor(random() * (Date.now() - createdMs)) : createdMs;
    const email = `${first}.${last}.${i}@${pick(DOMAINS, random)}`.toLowerCase();
    yield [
      id,
      email,
      normalizeEmail(email),
      random() < 0.9 ? `${first} ${last}` : null,
      random() < 0.5 ? `+234${String(8_000_000_000 + Math.floor(random() * 999_999_999))}` : null,
      '{}',
      new Date(createdMs).toISOString(),
      new Date(updatedMs).toISOString(),
      null,
    ];
  }
}

function insertStatement(db: DatabaseSync, rows: number): StatementSync {
  const tuple = `(${COLUMNS.map(() => '?').join(', ')})`;
  return db.prepare(`insert into customers (${COLUMNS.join(', ')}) values ${Array(rows).fill(tuple).join(', ')}`);
}

/**
 * Creates (or migrates) the SQLite database at `path` and inserts `count` live customers,
 * created in time order over the last two years (ids from `newId('customer')`, so id order
 * matches creation order), with unique emails. Sets `row_counts.customers` to the number
 * of live customers. Meant for an empty database; bench data only (synchronous = OFF).
 */
export async function seedCustomers(path: string, count: number, sampleSize = 10_000): Promise<SeedResult> {
  const handle = openDatabase({ kind: 'sqlite', path });
  try {
    await migrateToLatest(handle);
  } finally {
    await handle.close();
  }

  const started = performance.now();
  const db = new DatabaseSync(path);
  try {
    // Durability is irrelevant for throwaway bench data; the server reopens with its own pragmas.
    // `threads` lets CREATE INDEX sort on both cores.
    db.exec('PRAGMA synchronous = OFF');
    db.exec('PRAGMA cache_size = -262144');
    db.exec('PRAGMA threads = 2');
    const sampleIds: string[] = [];
    const full = insertStatement(db, ROWS_PER_INSERT);
    const values: (string | null)[] = [];

    db.exec('BEGIN');
    // Building the secondary indexes once, by sorting, after the rows are in is ~3x faster than
    // maintaining five of them row by row. They are re-created from their own stored SQL, so
    // the schema ends up exactly as the migration made it.
    const indexes = db
      .prepare(
        "select name, sql from sqlite_master where type = 'index' and tbl_name = 'customers' and sql is not null",
      )
      .all() as { name: string; sql: string }[];
    for (const index of indexes) db.exec(`drop index "${index.name}"`);
    for (const row of customerRows(count, sampleIds, sampleSize)) {
      values.push(...row);
      if (values.length === ROWS_PER_INSERT * COLUMNS.length) {
        full.run(...values);
        values.length = 0;
      }
    }
    if (values.length > 0) insertStatement(db, values.length / COLUMNS.length).run(...values);
    for (const index of indexes) db.exec(index.sql);
    db.prepare(
      `insert into row_counts (name, count) values ('customers', ?)
       on conflict (name) do update set count = excluded.count`,
    ).run(count);
    db.exec('COMMIT');
    db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
    return { count, sampleIds, insertMs: performance.now() - started };
  } finally {
    db.close();
  }
}

/** Rows per `insert … select from unnest(…)` on PostgreSQL (one array parameter per column). */
const PG_ROWS_PER_INSERT = 10_000;
const PG_COLUMN_TYPES = [
  'text',
  'text',
  'text',
  'text',
  'text',
  'text',
  'timestamptz',
  'timestamptz',
  'timestamptz',
] as const;

/**
 * Migrates the (empty) PostgreSQL database at `url` to the project's schema and inserts
 * `count` live customers (the same rows as `seedCustomers`), in one transaction, in batches of
 * 10,000 via unnest() arrays; sets `row_counts.customers` and ANALYZEs the table so the
 * planner sees the real size. Bench data only.
 */
export async function seedCustomersPostgres(url: string, count: number, sampleSize = 10_000): Promise<SeedResult> {
  const handle = openDatabase({ kind: 'postgres', url });
  try {
    await migrateToLatest(handle);
  } finally {
    await handle.close();
  }

  const started = performance.now();
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const sampleIds: string[] = [];
    const columns: CustomerValues[] = COLUMNS.map(() => []);
    const insert =
      `insert into customers (${COLUMNS.join(', ')}) select * from unnest(` +
      `${PG_COLUMN_TYPES.map((type, i) => `$${i + 1}::${type}[]`).join(', ')})`;
    const flush = async () => {
      await client.query(insert, columns);
      for (const column of columns) column.length = 0;
    };
    await client.query('begin');
    for (const row of customerRows(count, sampleIds, sampleSize)) {
      row.forEach((value, i) => columns[i]!.push(value));
      if (columns[0]!.length === PG_ROWS_PER_INSERT) await flush();
    }
    if (columns[0]!.length > 0) await flush();
    await client.query(
      `insert into row_counts (name, count) values ('customers', $1)
       on conflict (name) do update set count = excluded.count`,
      [count],
    );
    await client.query('commit');
    await client.query('analyze customers');
    return { count, sampleIds, insertMs: performance.now() - started };
  } finally {
    await client.end();
  }
}
