// A meter's value for one customer over a time range (SPEC §15): what the pricing side bills
// and GET /api/customers/{id}/usage shows. Reads through the UsageStore.
import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../../db/database.ts';
import { NotFoundError, ValidationError } from '../../http/errors.ts';
import { parseTimestamp } from '../../shared/timestamps.ts';
import { findMeter } from '../meters/meters.service.ts';
import { sqlUsageStore } from './usage.store.ts';

/**
 * The aggregated value of meter `query.meter_id` for customer `query.customer_id` over the
 * events with `from <= timestamp < to` (ISO 8601 instants), by the meter's aggregation:
 * count, sum, max, last (latest timestamp, then greatest transaction_id in byte order) or
 * unique_count. Returns canonical decimal text (`"12.5"`, exact: never a binary float;
 * count and unique_count are integers), `"0"` when no event falls in the range or the range
 * is empty. Every stored event counts, late ones included (which of them bill is the
 * meter's `late_events` policy, applied by the pricing side). Throws 404 `not_found` for an
 * unknown meter, 400 `validation_error` for a bound that is not an ISO 8601 instant.
 */
export async function aggregateUsage(
  db: Kysely<Database> | Transaction<Database>,
  query: { customer_id: string; meter_id: string; from: string; to: string },
): Promise<string> {
  const meter = await findMeter(db, query.meter_id);
  if (!meter) throw new NotFoundError('meter', query.meter_id);
  const from = parseTimestamp(query.from);
  const to = parseTimestamp(query.to);
  if (Number.isNaN(from)) throw new ValidationError('from must be an ISO 8601 date-time', 'from');
  if (Number.isNaN(to)) throw new ValidationError('to must be an ISO 8601 date-time', 'to');
  return sqlUsageStore.aggregate(db, {
    customer_id: query.customer_id,
    meter,
    from: new Date(from).toISOString(),
    to: new Date(to).toISOString(),
  });
}
