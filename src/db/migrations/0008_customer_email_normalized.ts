// Emails compare by one normalisation computed in TypeScript (SPEC §3): the new column
// `customers.email_normalized` holds normalizeEmail(email) and carries the unique index of
// live customers, replacing 0001's `lower(email)` index, which SQLite (ASCII-only lower())
// and PostgreSQL evaluated differently, and differently from the code.
//
// The backfill runs here in TypeScript with the same function the service uses, so both
// databases get the same values. Live customers that collide once normalised (possible
// where lower() folded less than toLowerCase, or NFC and NFD forms were both stored) cannot
// both own the email: the oldest (created_at, then id) keeps it; each younger one stays a
// live customer with its email, payments and events untouched, but its email_normalized
// becomes `<normalised> (collided <its id>)` — unique, and with a space no valid address
// can produce, so lookups by email find only the oldest. Changing that customer's email
// through the API gives it a normal value again. The migration always finishes.
import { type Kysely, sql } from 'kysely';
import { isPostgres } from '../column-types.ts';

// The email comparison form as it stood when this migration was written (SPEC §3: NFC, then
// full lower case); a migration keeps its own copy so a later change of the rule cannot alter
// what it did.
function normalizeEmail(email: string): string {
  return email.normalize('NFC').toLowerCase();
}

const BATCH = 500;

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
async function backfill(db: Kysely<any>): Promise<void> {
  const owned = new Set<string>();
  let after: { created_at: string; id: string } | undefined;
  for (;;) {
    let query = db
      .selectFrom('customers')
      .select(['id', 'email', 'created_at', 'deleted_at'])
      .orderBy('created_at')
      .orderBy('id')
      .limit(BATCH);
    if (after) {
      const { created_at, id } = after;
      query = query.where((eb) =>
        eb.or([eb('created_at', '>', created_at), eb.and([eb('created_at', '=', created_at), eb('id', '>', id)])]),
      );
    }
    const rows: { id: string; email: string; created_at: string; deleted_at: string | null }[] = await query.execute();
    for (const row of rows) {
      let value = normalizeEmail(row.email);
      if (row.deleted_at === null) {
        if (owned.has(value)) value = `${value} (collided ${row.id})`;
        else owned.add(value);
      }
      await db.updateTable('customers').set({ email_normalized: value }).where('id', '=', row.id).execute();
    }
    const last = rows.at(-1);
    if (!last || rows.length < BATCH) return;
    after = { created_at: last.created_at, id: last.id };
  }
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function up(db: Kysely<any>): Promise<void> {
  // NOT NULL needs a default for existing rows; SQLite cannot drop it afterwards, and no
  // writer relies on it (a forgotten value would collide on the unique index, loudly).
  await db.schema
    .alterTable('customers')
    .addColumn('email_normalized', 'text', (c) => c.notNull().defaultTo(''))
    .execute();
  await backfill(db);
  if (isPostgres(db)) {
    await db.schema
      .alterTable('customers')
      .alterColumn('email_normalized', (c) => c.dropDefault())
      .execute();
  }
  await db.schema.dropIndex('customers_email_unique').execute();
  // One live customer per normalised email (SPEC §3).
  await db.schema
    .createIndex('customers_email_normalized_unique')
    .on('customers')
    .unique()
    .column('email_normalized')
    .where(sql.ref('deleted_at'), 'is', null)
    .execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('customers_email_normalized_unique').execute();
  await db.schema
    .createIndex('customers_email_unique')
    .on('customers')
    .unique()
    .expression(sql`lower(email)`)
    .where(sql.ref('deleted_at'), 'is', null)
    .execute();
  await db.schema.alterTable('customers').dropColumn('email_normalized').execute();
}
