// Secrets at rest (SPEC §10): a saved payment method's provider credential (a Paystack
// authorization_code, a Stripe PaymentMethod id) is stored encrypted with DATA_ENCRYPTION_KEY,
// AES-256-GCM from node:crypto. A stored value is `v1.<base64url(iv ‖ tag ‖ ciphertext)>`:
// a fresh 12-byte IV per value, the 16-byte tag authenticates it, so a changed byte or the
// wrong key fails loudly instead of yielding garbage.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

const VERSION = 'v1.';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** Thrown when a stored value cannot be decrypted: wrong key, altered or not ours. */
export class DecryptionError extends Error {
  constructor() {
    super('the stored secret cannot be decrypted with DATA_ENCRYPTION_KEY (wrong key or altered value)');
    this.name = 'DecryptionError';
  }
}

/** Encrypts `plaintext` (UTF-8) with the 32-byte `key`. Returns the stored form `v1.…`. */
export function encryptSecret(key: Buffer, plaintext: string): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return VERSION + Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url');
}

/**
 * Decrypts a value made by encryptSecret with the same `key`. Throws DecryptionError when
 * the key is wrong, the value was altered, or it is not in the stored form.
 */
export function decryptSecret(key: Buffer, stored: string): string {
  if (!stored.startsWith(VERSION)) throw new DecryptionError();
  const raw = Buffer.from(stored.slice(VERSION.length), 'base64url');
  if (raw.length < IV_BYTES + TAG_BYTES) throw new DecryptionError();
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, IV_BYTES));
    decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    return Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
  } catch {
    throw new DecryptionError();
  }
}
