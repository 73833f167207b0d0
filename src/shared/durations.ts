// Durations as SPEC §1 writes them: an integer and a unit (`250ms`, `5s`, `5m`, `2h`, `3d`).
// Strict on purpose: `5 minutes` or `1.5h` in a config file is a typo we refuse at start.

const UNIT_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
const DURATION = /^(\d{1,9})(ms|s|m|h|d)$/;

/**
 * Parses one duration (`"250ms"`, `"5s"`, `"5m"`, `"2h"`, `"3d"`) into milliseconds.
 * Returns `undefined` when the text is not a duration, so callers word their own error.
 */
export function parseDuration(text: string): number | undefined {
  const match = DURATION.exec(text.trim());
  if (!match) return undefined;
  return Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS];
}

/**
 * Parses a comma-separated list of durations (`"5s,5m,30m"`) into milliseconds, in order.
 * Returns `undefined` when any item is not a duration or the list is empty.
 */
export function parseDurationList(text: string): number[] | undefined {
  const parts = text.split(',').map((part) => part.trim());
  const durations = parts.map(parseDuration);
  if (parts.length === 0 || durations.some((d) => d === undefined)) return undefined;
  return durations as number[];
}
