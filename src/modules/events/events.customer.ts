// Which customer an event is about (SPEC §16: a customer's recent events, read by index).
// Read from the payload as it is written: a resource that names its customer (`customer_id`:
// subscriptions, invoices, payments, credit notes, methods, dunning cases, balance entries,
// discounts), a customer itself (`id`: customer.*), or an attempt's invoice
// (`invoice.customer_id`: invoice.payment_attempted). Migration 0040 backfills with the same rule.

const CUSTOMER_PREFIX = 'cus_';

function customerIdIn(value: unknown): string | null {
  return typeof value === 'string' && value.startsWith(CUSTOMER_PREFIX) ? value : null;
}

/**
 * The customer id (`cus_…`) event payload `data` is about, or null (a coupon, a webhook
 * endpoint, a test clock, or a payment nobody could be attributed to). Pure; never throws.
 */
export function eventCustomerId(data: unknown): string | null {
  if (typeof data !== 'object' || data === null) return null;
  const record = data as Record<string, unknown>;
  const invoice = record.invoice;
  return (
    customerIdIn(record.customer_id) ??
    customerIdIn(record.id) ??
    (typeof invoice === 'object' && invoice !== null
      ? customerIdIn((invoice as Record<string, unknown>).customer_id)
      : null)
  );
}
