// Invoice totals (SPEC §9 "Totals", §12): the pipeline's subtotal, discounts, taxes, total and
// the credit applied, beside amount_due. Every invoice before this one had one line, the
// plan's price, and no credit: subtotal = total = amount_due, the others 0. Its stored lines
// gain what a line now has (`kind: subscription`, `proration: false`, `unit_amount` = the
// amount of a quantity-1 line, else null), so old and new invoices read the same.
import { type Kysely, sql } from 'kysely';
import { columnTypes, isPostgres } from '../column-types.ts';

const ADDED = ['subtotal', 'total_discount', 'total_tax', 'total', 'applied_balance'] as const;

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function up(db: Kysely<any>): Promise<void> {
  const t = columnTypes(db);
  for (const column of ADDED) {
    await db.schema
      .alterTable('invoices')
      .addColumn(column, t.bigint, (c) => {
        const added = c.notNull().defaultTo(0);
        // A discount total and an applied credit are never negative; the others may be (a credit invoice).
        return column === 'total_discount' || column === 'applied_balance'
          ? added.check(sql`${sql.ref(column)} >= 0`)
          : added;
      })
      .execute();
  }
  // One statement per dialect, each row rewritten once, its lines kept in their order.
  if (isPostgres(db)) {
    await sql`
      update invoices set subtotal = amount_due, total = amount_due, lines = (
        select coalesce(jsonb_agg(
          line || jsonb_build_object(
            'kind', 'subscription',
            'proration', false,
            'unit_amount', case when line -> 'quantity' = '1'::jsonb then line -> 'amount' else 'null'::jsonb end
          ) order by position), '[]'::jsonb)::text
        from jsonb_array_elements(invoices.lines::jsonb) with ordinality as elements(line, position)
      )`.execute(db);
  } else {
    await sql`
      update invoices set subtotal = amount_due, total = amount_due, lines = (
        select json_group_array(json_set(
          value,
          '$.kind', 'subscription',
          '$.proration', json('false'),
          '$.unit_amount', case when json_extract(value, '$.quantity') = 1 then json_extract(value, '$.amount') end
        ) order by key)
        from json_each(invoices.lines)
      )`.execute(db);
  }
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function down(db: Kysely<any>): Promise<void> {
  for (const column of [...ADDED].reverse()) {
    await db.schema.alterTable('invoices').dropColumn(column).execute();
  }
}
