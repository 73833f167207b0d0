// An invoice's `billing_reason` (SPEC §9 "Billing reason") is stored, written by its issuer,
// which knows why it issues it: a kind alone cannot tell a subscription's first invoice
// (`subscription_create`) or a plan change's new period (`subscription_update`) from a renewal.
// Rows before this migration are given what their kind and place tell: `manual` for a one-off,
// `subscription_update` for a plan change's prorations, `subscription_create` for the earliest
// period invoice of a subscription created without a trial (issued at its creation; a trial's
// first invoice comes at its end, a cycle), `subscription_cycle` for the rest — a plan change's
// new period among them, which nothing on the row tells apart.
import type { Kysely } from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('invoices')
    .addColumn('billing_reason', 'text', (c) => c.notNull().defaultTo('subscription_cycle'))
    .execute();
  await db.updateTable('invoices').set({ billing_reason: 'manual' }).where('kind', '=', 'one_off').execute();
  await db
    .updateTable('invoices')
    .set({ billing_reason: 'subscription_update' })
    .where('kind', '=', 'proration')
    .execute();
  await db
    .updateTable('invoices')
    .set({ billing_reason: 'subscription_create' })
    .where('kind', '=', 'period')
    .where((eb) =>
      eb.and([
        eb('subscription_id', 'in', eb.selectFrom('subscriptions').select('id').where('trial_end', 'is', null)),
        eb(
          eb.refTuple('subscription_id', 'period_start'),
          'in',
          eb
            .selectFrom('invoices as first')
            .select(['first.subscription_id', (inner) => inner.fn.min('first.period_start').as('period_start')])
            .where('first.kind', '=', 'period')
            .groupBy('first.subscription_id'),
        ),
      ]),
    )
    .execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations describe the schema, not use it
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('invoices').dropColumn('billing_reason').execute();
}
