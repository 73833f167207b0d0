// Secrets at rest (SPEC §10): a saved payment method's provider credential (a Paystack
// authorization_code, a Stripe PaymentMethod id) is stored encrypted with the first of
// DATA_ENCRYPTION_KEYS, AES-256-GCM from node:crypto. A stored value is
// `v1.<base64url(iv ‖ tag ‖ ciphertext)>`: a fresh 12-byte IV per value, the 16-byte tag
// authenticates it, so a changed byte or the wrong key fails loudly instead of yielding
// garbage — which is also what lets a value be tried against each configured key in turn.
import { createCipheriv, createDecipheriv, createSecretKey, type KeyObject, randomBytes } from 'node:crypto';

const VERSION = 'v1.';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/**
 * Each key's KeyObject, built once: passing a Buffer makes node:crypto build one per call
 * (a measurable share of every saved-card charge's CPU).
 */
const keyObjects = new WeakMap<Buffer, KeyObject>();

function keyObject(key: Buffer): KeyObject {
  let object = keyObjects.get(key);
  if (!object) keyObjects.set(key, (object = createSecretKey(key)));
  return object;
}

/** Thrown when a stored value cannot be decrypted: wrong key, altered or not ours. */
export class DecryptionError extends Error {
  constructor() {
    super('the stored secret cannot be decrypted with any DATA_ENCRYPTION_KEYS key (wrong key or altered value)');
    this.name = 'DecryptionError';
  }
}

/** Encrypts `plaintext` (UTF-8) with the 32-byte `key`. Returns the stored form `v1.…`. */
export function encryptSecret(key: Buffer, plaintext: string): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', keyObject(key), iv);
  const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return VERSION + Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url');
}

/**
 * Decrypts a value made by encryptSecret with `keys` (one key, or several newest first: the
 * first that authenticates it wins). Throws DecryptionError when no key opens it, the value
 * was altered, or it is not in the stored form.
 */
export function decryptSecret(keys: Buffer | readonly Buffer[], stored: string): string {
  const opened = openSecret(Buffer.isBuffer(keys) ? [keys] : keys, stored);
  if (opened === undefined) throw new DecryptionError();
  return opened.plaintext;
}

/**
 * Tries `keys` in order on `stored`: the plaintext and the index of the key that opened it,
 * or undefined when none does (wrong keys, altered, or not in the stored form). For key
 * rotation, which needs to know whether a value is under the newest key.
 */
export function openSecret(
  keys: readonly Buffer[],
  stored: string,
): { plaintext: string; keyIndex: number } | undefined {
  if (!stored.startsWith(VERSION)) return undefined;
  const raw = Buffer.from(stored.slice(VERSION.length), 'base64url');
  if (raw.length < IV_BYTES + TAG_BYTES) return undefined;
  const iv = raw.subarray(0, IV_BYTES);
  const tag = raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES);
  const body = raw.subarray(IV_BYTES + TAG_BYTES);
  for (const [keyIndex, key] of keys.entries()) {
    try {
      const decipher = createDecipheriv('aes-256-gcm', keyObject(key), iv);
      decipher.setAuthTag(tag);
      return { plaintext: Buffer.concat([decipher.update(body), decipher.final()]).toString('utf8'), keyIndex };
    } catch {
      // Not this key (the tag does not authenticate): try the next.
    }
  }
  return undefined;
}
