// Versioned migrations, applied in order at start and by `billing migrate`. On PostgreSQL
// Kysely's Migrator holds an advisory lock, so instances starting together migrate once.
// The applied migrations are a set, not a sequence: branches developed in parallel number
// their migrations independently, so a database that already ran 0021 must still accept a
// 0020 merged after it (each migration touches only its own tables and columns).
import { type Migration, Migrator } from 'kysely/migration';
import type { DatabaseHandle } from './connect.ts';
import * as foundation from './migrations/0001_foundation.ts';
import * as plansSubscriptions from './migrations/0002_plans_subscriptions.ts';
import * as providerEvents from './migrations/0003_provider_events.ts';
import * as webhooks from './migrations/0004_webhooks.ts';
import * as idempotency from './migrations/0005_idempotency.ts';
import * as dunning from './migrations/0006_dunning.ts';
import * as countDeltas from './migrations/0007_count_deltas.ts';
import * as customerEmailNormalized from './migrations/0008_customer_email_normalized.ts';
import * as subscriptionPaymentTimes from './migrations/0009_subscription_payment_times.ts';
import * as refundStatus from './migrations/0010_refund_status.ts';
import * as paymentReferences from './migrations/0011_payment_references.ts';
import * as providerEventLists from './migrations/0012_provider_event_lists.ts';
import * as invoices from './migrations/0013_invoices.ts';
import * as invoicePaymentAttempts from './migrations/0014_invoice_payment_attempts.ts';
import * as paymentMethods from './migrations/0015_payment_methods.ts';
import * as testClocks from './migrations/0016_test_clocks.ts';
import * as refundRequests from './migrations/0018_refund_requests.ts';
import * as chargeAttempts from './migrations/0017_charge_attempts.ts';
import * as dunningRetries from './migrations/0019_dunning_retries.ts';
import * as refundTestClocks from './migrations/0020_refund_test_clocks.ts';
import * as eventEmittedAt from './migrations/0023_event_emitted_at.ts';
import * as invoiceTotals from './migrations/0024_invoice_totals.ts';
import * as billingAnchorBalances from './migrations/0025_billing_anchor_balances.ts';
import * as invoiceDrafts from './migrations/0026_invoice_drafts.ts';
import * as planChanges from './migrations/0027_plan_changes.ts';
import * as dueWorkByScope from './migrations/0028_due_work_by_scope.ts';
import * as taxesBalanceAdjustments from './migrations/0029_taxes_balance_adjustments.ts';
import * as customerPreferredLocale from './migrations/0030_customer_preferred_locale.ts';
import * as coupons from './migrations/0031_coupons.ts';
import * as creditNotes from './migrations/0032_credit_notes.ts';
import * as usage from './migrations/0033_usage.ts';
import * as usagePricing from './migrations/0034_usage_pricing.ts';
import * as consoleSessions from './migrations/0035_console_sessions.ts';
import * as portalSessions from './migrations/0036_portal_sessions.ts';
import * as creditNoteHostedTokens from './migrations/0037_credit_note_hosted_tokens.ts';
import * as workerRowFailures from './migrations/0038_worker_row_failures.ts';
import * as usageCoarseRollups from './migrations/0039_usage_coarse_rollups.ts';
import * as consoleIndexes from './migrations/0040_console_indexes.ts';
import * as invoiceKinds from './migrations/0041_invoice_kinds.ts';
import * as usageSpans from './migrations/0042_usage_spans.ts';
import * as billedUsagePrevious from './migrations/0047_billed_usage_previous.ts';
import * as invoiceBillingReasons from './migrations/0048_invoice_billing_reasons.ts';
import * as realTimeClockLeases from './migrations/0049_real_time_clock_leases.ts';

/** Every migration, in order. A new one is a new file plus a line here. */
const MIGRATIONS: Record<string, Migration> = {
  '0001_foundation': foundation,
  '0002_plans_subscriptions': plansSubscriptions,
  '0003_provider_events': providerEvents,
  '0004_webhooks': webhooks,
  '0005_idempotency': idempotency,
  '0006_dunning': dunning,
  '0007_count_deltas': countDeltas,
  '0008_customer_email_normalized': customerEmailNormalized,
  '0009_subscription_payment_times': subscriptionPaymentTimes,
  '0010_refund_status': refundStatus,
  '0011_payment_references': paymentReferences,
  '0012_provider_event_lists': providerEventLists,
  '0013_invoices': invoices,
  '0014_invoice_payment_attempts': invoicePaymentAttempts,
  '0015_payment_methods': paymentMethods,
  '0016_test_clocks': testClocks,
  '0018_refund_requests': refundRequests,
  '0017_charge_attempts': chargeAttempts,
  '0019_dunning_retries': dunningRetries,
  '0020_refund_test_clocks': refundTestClocks,
  '0023_event_emitted_at': eventEmittedAt,
  '0024_invoice_totals': invoiceTotals,
  '0025_billing_anchor_balances': billingAnchorBalances,
  '0026_invoice_drafts': invoiceDrafts,
  '0027_plan_changes': planChanges,
  '0028_due_work_by_scope': dueWorkByScope,
  '0029_taxes_balance_adjustments': taxesBalanceAdjustments,
  '0030_customer_preferred_locale': customerPreferredLocale,
  '0031_coupons': coupons,
  '0032_credit_notes': creditNotes,
  '0033_usage': usage,
  '0034_usage_pricing': usagePricing,
  '0035_console_sessions': consoleSessions,
  '0036_portal_sessions': portalSessions,
  '0037_credit_note_hosted_tokens': creditNoteHostedTokens,
  '0038_worker_row_failures': workerRowFailures,
  '0039_usage_coarse_rollups': usageCoarseRollups,
  '0040_console_indexes': consoleIndexes,
  '0041_invoice_kinds': invoiceKinds,
  '0042_usage_spans': usageSpans,
  '0047_billed_usage_previous': billedUsagePrevious,
  '0048_invoice_billing_reasons': invoiceBillingReasons,
  '0049_real_time_clock_leases': realTimeClockLeases,
};

/** The names of every migration, in the order they apply. */
export const MIGRATION_NAMES: readonly string[] = Object.keys(MIGRATIONS).sort();

/** Every migration of the app by name (tests build variants of the set from it). */
export const APP_MIGRATIONS: Readonly<Record<string, Migration>> = MIGRATIONS;

/**
 * Applies every pending migration of `migrations` (default: the app's), in name order, also
 * those named before one already applied (Kysely's `allowUnorderedMigrations`). Returns the
 * names applied (empty when up to date). Throws the migration's own error when one fails;
 * nothing after it runs.
 */
export async function migrateToLatest(
  handle: DatabaseHandle,
  migrations: Readonly<Record<string, Migration>> = MIGRATIONS,
): Promise<string[]> {
  const migrator = new Migrator({
    db: handle.db,
    provider: { getMigrations: async () => migrations },
    migrationTableSchema: handle.schema,
    allowUnorderedMigrations: true,
  });
  const { error, results } = await migrator.migrateToLatest();
  if (error) throw error;
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}
