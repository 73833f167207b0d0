// The whole schema as Kysely sees it: one entry per table, each typed in tables/*.table.ts.
import type { ApiKeysTable } from './tables/api-keys.table.ts';
import type { InvoicePaymentAttemptsTable } from './tables/payment-attempts.table.ts';
import type { CustomerBalanceTransactionsTable } from './tables/balances.table.ts';
import type {
  ConsoleActionsTable,
  ConsoleLoginLinksTable,
  ConsoleSessionsTable,
} from './tables/console-sessions.table.ts';
import type { CouponsTable, DiscountsTable, PromotionCodesTable } from './tables/coupons.table.ts';
import type { CreditNoteNumbersTable, CreditNotesTable } from './tables/credit-notes.table.ts';
import type { CustomersTable } from './tables/customers.table.ts';
import type { DunningCasesTable, DunningStepsTable } from './tables/dunning.table.ts';
import type { EventsTable } from './tables/events.table.ts';
import type { IdempotencyKeysTable } from './tables/idempotency.table.ts';
import type { BilledUsageTable, UsageSpansTable } from './tables/billed-usage.table.ts';
import type { InvoiceNumbersTable, InvoicesTable } from './tables/invoices.table.ts';
import type { PaymentMethodsTable } from './tables/payment-methods.table.ts';
import type { PaymentReferencesTable, PaymentsTable, RefundsTable } from './tables/payments.table.ts';
import type { PlansTable } from './tables/plans.table.ts';
import type { PortalLoginsTable, PortalSessionsTable } from './tables/portal-sessions.table.ts';
import type { ProviderEventsTable, ProviderSubscriptionReferencesTable } from './tables/provider-events.table.ts';
import type { SubscriptionPendingItemsTable, SubscriptionsTable } from './tables/subscriptions.table.ts';
import type { TaxRatesTable } from './tables/tax-rates.table.ts';
import type { TestClocksTable } from './tables/test-clocks.table.ts';
import type {
  MetersTable,
  UsageDistinctTable,
  UsageEventKeysTable,
  UsageEventsTable,
  UsageRollupsTable,
} from './tables/usage.table.ts';
import type { WebhookAttemptsTable, WebhookDeliveriesTable, WebhookEndpointsTable } from './tables/webhooks.table.ts';
import type { RowCountDeltasTable, RowCountsTable } from './counts.table.ts';
import type { WorkerRowFailuresTable } from './row-failures.table.ts';

export interface Database {
  api_keys: ApiKeysTable;
  billed_usage: BilledUsageTable;
  usage_spans: UsageSpansTable;
  console_actions: ConsoleActionsTable;
  console_login_links: ConsoleLoginLinksTable;
  console_sessions: ConsoleSessionsTable;
  coupons: CouponsTable;
  credit_notes: CreditNotesTable;
  credit_note_numbers: CreditNoteNumbersTable;
  customers: CustomersTable;
  customer_balance_transactions: CustomerBalanceTransactionsTable;
  discounts: DiscountsTable;
  dunning_cases: DunningCasesTable;
  dunning_steps: DunningStepsTable;
  events: EventsTable;
  idempotency_keys: IdempotencyKeysTable;
  invoices: InvoicesTable;
  invoice_numbers: InvoiceNumbersTable;
  invoice_payment_attempts: InvoicePaymentAttemptsTable;
  meters: MetersTable;
  payments: PaymentsTable;
  payment_methods: PaymentMethodsTable;
  payment_references: PaymentReferencesTable;
  plans: PlansTable;
  portal_logins: PortalLoginsTable;
  portal_sessions: PortalSessionsTable;
  promotion_codes: PromotionCodesTable;
  provider_events: ProviderEventsTable;
  provider_subscription_references: ProviderSubscriptionReferencesTable;
  refunds: RefundsTable;
  subscriptions: SubscriptionsTable;
  subscription_pending_items: SubscriptionPendingItemsTable;
  tax_rates: TaxRatesTable;
  test_clocks: TestClocksTable;
  usage_events: UsageEventsTable;
  usage_event_keys: UsageEventKeysTable;
  usage_rollups: UsageRollupsTable;
  usage_rollups_hourly: UsageRollupsTable;
  usage_rollups_daily: UsageRollupsTable;
  usage_distinct_hourly: UsageDistinctTable;
  usage_distinct_daily: UsageDistinctTable;
  webhook_attempts: WebhookAttemptsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  webhook_endpoints: WebhookEndpointsTable;
  row_counts: RowCountsTable;
  row_count_deltas: RowCountDeltasTable;
  worker_row_failures: WorkerRowFailuresTable;
}
