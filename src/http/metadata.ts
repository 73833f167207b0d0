// Metadata merging for PATCH (Stripe's rule): given keys are set, a key set to "" is
// removed, `null` clears everything. The result keeps SPEC §2's 50-key limit.
import { ValidationError } from './errors.ts';

export const MAX_METADATA_KEYS = 50;

/** Merges `patch` into `current`. Throws 400 `validation_error` past 50 keys. */
export function mergeMetadata(
  current: Record<string, string>,
  patch: Record<string, string> | null,
): Record<string, string> {
  if (patch === null) return {};
  const merged = { ...current };
  for (const [key, value] of Object.entries(patch)) {
    if (value === '') delete merged[key];
    else merged[key] = value;
  }
  if (Object.keys(merged).length > MAX_METADATA_KEYS) {
    throw new ValidationError(`Metadata must have at most ${MAX_METADATA_KEYS} keys`, 'metadata');
  }
  return merged;
}
