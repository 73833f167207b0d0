// The whole schema as Kysely sees it: one entry per table, each typed in its module.
import type { ApiKeysTable } from '../modules/api-keys/api-keys.table.ts';
import type { InvoicePaymentAttemptsTable } from '../modules/collection/payment-attempts.table.ts';
import type { CustomersTable } from '../modules/customers/customers.table.ts';
import type { DunningCasesTable, DunningStepsTable } from '../modules/dunning/dunning.table.ts';
import type { EventsTable } from '../modules/events/events.table.ts';
import type { IdempotencyKeysTable } from '../modules/idempotency/idempotency.table.ts';
import type { InvoiceNumbersTable, InvoicesTable } from '../modules/invoices/invoices.table.ts';
import type { PaymentMethodsTable } from '../modules/payment-methods/payment-methods.table.ts';
import type { PaymentReferencesTable, PaymentsTable, RefundsTable } from '../modules/payments/payments.table.ts';
import type { PlansTable } from '../modules/plans/plans.table.ts';
import type {
  ProviderEventsTable,
  ProviderSubscriptionReferencesTable,
} from '../modules/provider-events/provider-events.table.ts';
import type { SubscriptionsTable } from '../modules/subscriptions/subscriptions.table.ts';
import type { TestClocksTable } from '../modules/test-clocks/test-clocks.table.ts';
import type {
  WebhookAttemptsTable,
  WebhookDeliveriesTable,
  WebhookEndpointsTable,
} from '../modules/webhooks/webhooks.table.ts';
import type { RowCountDeltasTable, RowCountsTable } from './counts.table.ts';

export interface Database {
  api_keys: ApiKeysTable;
  customers: CustomersTable;
  dunning_cases: DunningCasesTable;
  dunning_steps: DunningStepsTable;
  events: EventsTable;
  idempotency_keys: IdempotencyKeysTable;
  invoices: InvoicesTable;
  invoice_numbers: InvoiceNumbersTable;
  invoice_payment_attempts: InvoicePaymentAttemptsTable;
  payments: PaymentsTable;
  payment_methods: PaymentMethodsTable;
  payment_references: PaymentReferencesTable;
  plans: PlansTable;
  provider_events: ProviderEventsTable;
  provider_subscription_references: ProviderSubscriptionReferencesTable;
  refunds: RefundsTable;
  subscriptions: SubscriptionsTable;
  test_clocks: TestClocksTable;
  webhook_attempts: WebhookAttemptsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  webhook_endpoints: WebhookEndpointsTable;
  row_counts: RowCountsTable;
  row_count_deltas: RowCountDeltasTable;
}
