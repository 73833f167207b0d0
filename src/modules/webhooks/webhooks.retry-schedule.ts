// When a failed webhook delivery is tried again (SPEC §6): WEBHOOK_RETRY_SCHEDULE's delay for
// the attempt that failed, ±10% jitter so a receiver's outage does not end in a thundering
// herd, and a receiver's own Retry-After when it asks for longer. Pure: time is passed in.

/** Jitter as a share of the scheduled delay: ±10%. */
export const JITTER = 0.1;

/**
 * Delay in ms before the next attempt after attempt number `attempt` (1-based) failed, or
 * `undefined` when the schedule is used up and the delivery has failed for good.
 * `schedule` is config.webhookRetryScheduleMs (delays before retry 1, 2, …); `random` returns
 * [0, 1) (Math.random in production). A `retryAfterMs` longer than the jittered delay wins,
 * capped at the longest delay of the schedule so a receiver cannot park a delivery for ever.
 */
export function nextRetryDelay(
  attempt: number,
  schedule: readonly number[],
  retryAfterMs: number | undefined,
  random: () => number = Math.random,
): number | undefined {
  const base = schedule[attempt - 1];
  if (base === undefined) return undefined;
  const jittered = Math.round(base * (1 + JITTER * (2 * random() - 1)));
  if (retryAfterMs === undefined || retryAfterMs <= jittered) return jittered;
  return Math.min(retryAfterMs, Math.max(...schedule));
}

/**
 * A `Retry-After` header value in ms from `now`: delta-seconds (`120`) or an HTTP date
 * (RFC 9110 §10.2.3). Undefined when absent, malformed or in the past.
 */
export function parseRetryAfter(value: string | undefined, now: Date): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const at = Date.parse(text);
  if (Number.isNaN(at) || !/[a-z]/i.test(text)) return undefined;
  const ms = at - now.getTime();
  return ms > 0 ? ms : undefined;
}
