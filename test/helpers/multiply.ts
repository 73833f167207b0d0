// Many clock subscriptions fast, for scale tests and benches: the customers of one test clock
// (each with its subscription and saved payment method, seeded through the services) copied
// by SQL with fresh ids — seeding 10,000 or 100,000 through the services would take minutes
// to an hour. The copies share their original's encrypted credential and plan.
import { DatabaseSync } from 'node:sqlite';
import pg from 'pg';

/** Columns of `table` in the database behind `rows`. */
type Rows = (text: string, params?: unknown[]) => Promise<Record<string, unknown>[]>;

/**
 * Copies every customer of test clock `clockId` (with its subscriptions and payment methods)
 * `copies` times over `databaseUrl` (`sqlite:<path>` or `postgres://…`), with fresh ids (the
 * id's last 10 characters replaced by the copy's number), e-mails and fingerprints, and moves
 * the kept totals (row_counts) to match. Returns the number of customers afterwards.
 */
export async function multiplyClockCustomers(databaseUrl: string, clockId: string, copies: number): Promise<number> {
  const postgres = databaseUrl.startsWith('postgres');
  let rows: Rows;
  let close: () => Promise<void>;
  if (postgres) {
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    rows = async (text, params = []) => (await client.query(text, params)).rows as Record<string, unknown>[];
    close = () => client.end();
  } else {
    const db = new DatabaseSync(databaseUrl.replace(/^sqlite:/, ''));
    db.exec('PRAGMA busy_timeout = 5000');
    rows = async (text, params = []) => db.prepare(text).all(...(params as never[])) as Record<string, unknown>[];
    close = async () => db.close();
  }
  const fresh = (column: string) =>
    postgres
      ? `substr(c.${column}, 1, length(c.${column}) - 10) || lpad(k::text, 10, '0')`
      : `substr(c.${column}, 1, length(c.${column}) - 10) || printf('%010d', k)`;
  const suffixed = (column: string) => (postgres ? `c.${column} || '.' || k::text` : `c.${column} || '.' || k`);
  const overrides: Record<string, Record<string, string>> = {
    customers: {
      id: fresh('id'),
      email: `'m' || ${postgres ? 'k::text' : 'k'} || '.' || c.email`,
      email_normalized: `'m' || ${postgres ? 'k::text' : 'k'} || '.' || c.email_normalized`,
      external_id: `case when c.external_id is null then null else ${suffixed('external_id')} end`,
    },
    subscriptions: { id: fresh('id'), customer_id: fresh('customer_id') },
    payment_methods: { id: fresh('id'), customer_id: fresh('customer_id'), fingerprint: suffixed('fingerprint') },
  };
  const ofClock: Record<string, string> = {
    customers: 'c.test_clock_id = $2',
    subscriptions: 'c.test_clock_id = $2',
    payment_methods: 'c.customer_id in (select id from customers where test_clock_id = $2)',
  };
  try {
    const [before] = await rows(
      postgres
        ? 'select count(*)::int as n from customers where test_clock_id = $1'
        : 'select count(*) as n from customers where test_clock_id = ?',
      [clockId],
    );
    const originals = Number(before?.n);
    await rows('begin');
    for (const table of ['customers', 'subscriptions', 'payment_methods']) {
      const columns = postgres
        ? (
            await rows(
              `select column_name as name from information_schema.columns
               where table_name = $1 and table_schema = current_schema() order by ordinal_position`,
              [table],
            )
          ).map((r) => String(r.name))
        : (await rows(`select name from pragma_table_info('${table}')`)).map((r) => String(r.name));
      const values = columns.map((column) => overrides[table]![column] ?? `c.${column}`);
      const list = columns.map((column) => `"${column}"`).join(', ');
      const where = ofClock[table]!;
      if (postgres) {
        await rows(
          `insert into ${table} (${list}) select ${values.join(', ')}
           from ${table} c, generate_series(1, $1::int) k where ${where}`,
          [copies, clockId],
        );
      } else {
        await rows(
          `with recursive seq(k) as (select 1 union all select k + 1 from seq where k < ?1)
           insert into ${table} (${list}) select ${values.join(', ')} from ${table} c, seq
           where ${where.replace('$2', '?2')}`,
          [copies, clockId],
        );
      }
    }
    for (const name of ['customers', 'subscriptions']) {
      await rows(
        postgres
          ? 'update row_counts set count = count + $1 where name = $2'
          : 'update row_counts set count = count + ? where name = ?',
        [originals * copies, name],
      );
    }
    await rows('commit');
    return originals * (copies + 1);
  } finally {
    await close();
  }
}
