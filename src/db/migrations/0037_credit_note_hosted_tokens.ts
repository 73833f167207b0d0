// A credit note's hosted page (SPEC §14 "Credit notes": "hosted page and PDF like invoices"):
// `hosted_token`, 32 random bytes in base64url as an invoice's, is the secret part of
// `hosted_credit_note_url` (`/c/<token>`). Notes issued before this migration get one here, so
// every note has a page; the unique index comes after, once no row lacks its token. The column
// stays nullable in the schema (SQLite cannot add a NOT NULL column without a default); the
// only writer, credit-notes.records.ts, always sets it.
import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('credit_notes').addColumn('hosted_token', 'text').execute();
  const rows = (await db.selectFrom('credit_notes').select('id').execute()) as { id: string }[];
  for (const { id } of rows) {
    await db
      .updateTable('credit_notes')
      .set({ hosted_token: randomBytes(32).toString('base64url') })
      .where('id', '=', id)
      .execute();
  }
  await db.schema
    .createIndex('credit_notes_by_hosted_token')
    .on('credit_notes')
    .columns(['hosted_token'])
    .unique()
    .execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('credit_notes_by_hosted_token').execute();
  await db.schema.alterTable('credit_notes').dropColumn('hosted_token').execute();
}
