// The bench's floor for a list: a minimal Fastify route doing the same page read as
// GET /api/customers (docs/performance.md): one prepared node:sqlite statement for the page's
// rows (the response's columns, newest first, id tie-break, through the same index), one
// for the kept total, metadata parsed from its JSON text, and the app's own response schema.
// No auth, hooks, logging, metrics or Kysely. Run as a child of bench/run.ts on HOST:PORT
// over DATABASE_URL (sqlite:<path>), opened as the app opens it (WAL, busy timeout).
import { DatabaseSync } from 'node:sqlite';
import Fastify from 'fastify';
import { type ListQueryInput, pageSchema, parseListParams } from '../src/http/lists.ts';
import { customerSchema } from '../src/modules/customers/customers.schemas.ts';

const url = process.env.DATABASE_URL ?? '';
if (!url.startsWith('sqlite:')) throw new Error('minimal-server: DATABASE_URL must be sqlite:<path>');
const database = new DatabaseSync(url.slice('sqlite:'.length));
database.exec('PRAGMA busy_timeout = 5000');
database.exec('PRAGMA journal_mode = WAL');

const rows = database.prepare(
  `select id, email, name, phone, preferred_locale, external_id, metadata, test_clock_id, tax_exempt, tax_ids, tax_rate_ids,
   address, created_at, updated_at from customers
   where deleted_at is null order by created_at desc, id desc limit ? offset ?`,
);
const total = database.prepare(`select count from row_counts where name = 'customers'`);

interface Row {
  id: string;
  email: string;
  name: string | null;
  phone: string | null;
  preferred_locale: string | null;
  external_id: string | null;
  metadata: string;
  test_clock_id: string | null;
  tax_exempt: string;
  tax_ids: string;
  tax_rate_ids: string;
  address: string | null;
  created_at: string;
  updated_at: string;
}

const app = Fastify({ logger: false });
app.get<{ Querystring: ListQueryInput }>(
  '/api/customers',
  { schema: { response: { 200: pageSchema(customerSchema) } } },
  async (request) => {
    const params = parseListParams(request.query);
    const page = rows.all(params.limit, params.offset) as unknown as Row[];
    // The schema's field order and names (test_clock_id is shown as test_clock), as the app
    // answers; the JSON text columns parsed as the app parses them.
    const data = page.map(({ test_clock_id, ...row }) => ({
      ...row,
      metadata: JSON.parse(row.metadata) as Record<string, string>,
      test_clock: test_clock_id,
      tax_ids: JSON.parse(row.tax_ids) as unknown[],
      tax_rate_ids: JSON.parse(row.tax_rate_ids) as string[],
      address: row.address === null ? null : (JSON.parse(row.address) as Record<string, string>),
    }));
    const count = (total.get() as { count: number } | undefined)?.count ?? 0;
    return { data, meta: { total: count, page: params.page, limit: params.limit } };
  },
);
app.get('/', async () => ({ ok: true }));
process.once('SIGTERM', () => void app.close().then(() => process.exit(0)));
await app.listen({ port: Number(process.env.PORT), host: process.env.HOST ?? '127.0.0.1' });
