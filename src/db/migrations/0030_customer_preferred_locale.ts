// Customer `preferred_locale` (SPEC §14 "Documents"): the BCP 47 tag whose language picks the
// words and number/date formats of the customer's hosted invoice pages and PDFs. Stored as
// the client sent it (`de-AT`); null means `en`. Only this column: nothing else changes.
import type { Kysely } from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('customers').addColumn('preferred_locale', 'text').execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('customers').dropColumn('preferred_locale').execute();
}
