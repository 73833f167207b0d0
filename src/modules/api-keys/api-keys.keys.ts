// Key material: generation, hashing and the parts shown in lists. Pure functions.
import { hash, randomBytes } from 'node:crypto';

const KEY_PREFIX = 'bk_';

/** A new secret API key: `bk_` + 32 url-safe characters (192 random bits). */
export function generateKey(): string {
  return KEY_PREFIX + randomBytes(24).toString('base64url');
}

/** Lowercase hex SHA-256 of a key: the only form in which keys are stored (SPEC §2). */
export function hashKey(key: string): string {
  // One-shot hash (no Hash object per call): it runs on every authenticated request.
  return hash('sha256', key, 'hex');
}

/** The recognisable, non-secret parts of a key: its first 7 characters and last 4. */
export function keyHints(key: string): { prefix: string; last4: string } {
  return { prefix: key.slice(0, 7), last4: key.slice(-4) };
}
