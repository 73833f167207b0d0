// Environment → typed, frozen Config (SPEC §1). The only module that reads process.env;
// every other module receives the Config it needs.
import { readFileSync } from 'node:fs';
import ipaddr from 'ipaddr.js';
import { parseDuration, parseDurationList } from './shared/durations.ts';
import { isProviderName, PROVIDER_NAMES, type ProviderName } from './shared/provider-names.ts';

export type DatabaseConfig = { kind: 'sqlite'; path: string } | { kind: 'postgres'; url: string };

export interface Config {
  port: number;
  host: string;
  database: DatabaseConfig;
  /** Bootstrap API keys (admin scope). Never logged. */
  apiKeys: readonly string[];
  /** PAYSTACK_SECRET_KEY: verifies Paystack events and is the Paystack API key (SPEC §10). '' = not set. */
  paystackSecretKey: string;
  stripeWebhookSecret: string;
  /** PAYSTACK_API_URL without a trailing slash (default https://api.paystack.co). */
  paystackApiUrl: string;
  /** STRIPE_API_KEY (`sk_…` or restricted `rk_…`); '' = Stripe cannot collect (SPEC §10). */
  stripeApiKey: string;
  /** STRIPE_API_URL: an origin (scheme, host, port; no path), default https://api.stripe.com. */
  stripeApiUrl: string;
  /** DEFAULT_PROVIDER: the provider a checkout uses when the request names none (SPEC §10). */
  defaultProvider: ProviderName;
  /** PROVIDER_TIMEOUT in ms: the deadline of one provider API call, answer included. */
  providerTimeoutMs: number;
  /**
   * The 32-byte AES-256-GCM keys of saved payment methods' credentials (SPEC §10), newest
   * first: DATA_ENCRYPTION_KEYS, or DATA_ENCRYPTION_KEY as a list of one; empty when neither is
   * set. A stored secret opens with any of them; new ones are encrypted with the first.
   * Required when a provider has an API key. Never logged.
   */
  dataEncryptionKeys: readonly Buffer[];
  /** The key new secrets are encrypted with: dataEncryptionKeys[0], undefined when none. Never logged. */
  dataEncryptionKey: Buffer | undefined;
  /** CIDRs exempt from the outbound-webhook private-address rule, as `[address, prefix]` text. */
  webhookAllowPrivateCidrs: readonly string[];
  /** Delays in ms before each webhook retry after the first attempt. */
  webhookRetryScheduleMs: readonly number[];
  webhookTimeoutMs: number;
  /** Delays in ms, from a dunning case's opening, of each reminder step. */
  dunningScheduleMs: readonly number[];
  dunningFinalAction: 'cancel' | 'unpaid';
  subscriptionIncompleteTtlMs: number;
  renewalGraceMs: number;
  /**
   * How long after its period starts a renewal invoice with usage or prorations stays `draft`
   * (late usage may still come), in ms; 0 finalizes it at once (SPEC §12 "Drafts").
   */
  invoiceFinalizeDelayMs: number;
  workerPollIntervalMs: number;
  /** Requests per window per API key; 0 disables rate limiting. */
  rateLimitMax: number;
  rateLimitWindowMs: number;
  redisUrl: string | undefined;
  logLevel: LogLevel;
  metricsPort: number | undefined;
  /**
   * Memory budget of the response cache's bodies in bytes (RESPONSE_CACHE_MB × 2^20); 0, the
   * default, keeps no bodies (ETag and 304 still apply). See http/response-cache.ts.
   */
  responseCacheBytes: number;
  /** INVOICE_PREFIX: invoice numbers are `<prefix>-<000001>` (SPEC §9). */
  invoicePrefix: string;
  /**
   * DEFAULT_TAX_RATE_IDS: the tax rates (`txr_…`) of an invoice whose subscription, plan and
   * customer name none (SPEC §14 precedence); [] by default. Their format is checked here,
   * their existence at start-up (server.ts: checkDefaultTaxRates), where the database is open.
   */
  defaultTaxRateIds: readonly string[];
  /** PUBLIC_URL without a trailing slash: the origin of hosted invoice pages (SPEC §9). */
  publicUrl: string;
  /** BUSINESS_NAME: who the hosted invoice page says the invoice is from (SPEC §9). */
  businessName: string;
  /**
   * BUSINESS_ADDRESS: the seller's address on invoice pages and PDFs (SPEC §14), one line of
   * text in which a literal `\n` separates the address lines; null when unset.
   */
  businessAddress: string | null;
  /** BUSINESS_TAX_ID: the seller's tax id (VAT number) on invoice pages and PDFs (SPEC §14); null when unset. */
  businessTaxId: string | null;
  /**
   * BUSINESS_LOGO_PATH: the seller's logo (a PNG or JPEG file, read once here) printed on
   * invoice and credit note pages and PDFs (SPEC §14 "Documents"); null when unset.
   */
  businessLogo: BusinessLogo | null;
  /** TEST_CLOCKS: the test-clock API and `test_clock` on customers (SPEC §11); off in production. */
  testClocks: boolean;
  /**
   * PORTAL_PLANS: the plans (`plan_…`) a customer may switch to in the customer portal
   * (SPEC §16), comma-separated; [] (the default) offers no switching.
   */
  portalPlans: readonly string[];
  /**
   * CONSOLE_IDLE_TIMEOUT in ms (default 30 minutes): an operator console session with no request
   * for this long is over (SPEC §16).
   */
  consoleIdleTimeoutMs: number;
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
type LogLevel = (typeof LOG_LEVELS)[number];

/** A configuration value that cannot be used; `message` is the one line printed at start. */
/** A logo to print on documents: the file's bytes and what they are. */
export interface BusinessLogo {
  bytes: Buffer;
  mediaType: 'image/png' | 'image/jpeg';
}

/** The largest logo accepted: it is inlined (base64) in every hosted page. */
export const BUSINESS_LOGO_MAX_BYTES = 256 * 1024;

/**
 * BUSINESS_LOGO_PATH read once at start-up: a local PNG or JPEG of at most
 * BUSINESS_LOGO_MAX_BYTES, recognized by its signature bytes (not its name). A local file,
 * not a URL: rendering never fetches (no network at render time, no request to an address
 * an operator's typo or an attacker chose). Throws ConfigError naming the path otherwise.
 */
function readBusinessLogo(env: Env): BusinessLogo | null {
  const path = env.BUSINESS_LOGO_PATH ?? '';
  if (path === '') return null;
  let bytes: Buffer;
  try {
    bytes = readFileSync(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'unreadable';
    throw new ConfigError('BUSINESS_LOGO_PATH', `cannot be read (${code}): ${path}`);
  }
  if (bytes.length > BUSINESS_LOGO_MAX_BYTES) {
    throw new ConfigError(
      'BUSINESS_LOGO_PATH',
      `must be at most ${BUSINESS_LOGO_MAX_BYTES / 1024} KiB (${path} is ${Math.ceil(bytes.length / 1024)} KiB)`,
    );
  }
  if (bytes.subarray(0, 8).equals(PNG_SIGNATURE)) return { bytes, mediaType: 'image/png' };
  if (bytes.length > 3 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) {
    return { bytes, mediaType: 'image/jpeg' };
  }
  throw new ConfigError('BUSINESS_LOGO_PATH', `must be a PNG or JPEG file: ${path} is neither`);
}

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

export class ConfigError extends Error {
  readonly variable: string;
  constructor(variable: string, message: string) {
    super(`${variable} ${message}`);
    this.name = 'ConfigError';
    this.variable = variable;
  }
}

type Env = Readonly<Record<string, string | undefined>>;

function read(env: Env, name: string, fallback: string): string {
  const value = env[name];
  return value === undefined || value.trim() === '' ? fallback : value.trim();
}

/** An optional line of printable text of at most `max` characters (no control characters); null when unset. */
function printable(env: Env, name: string, max: number): string | null {
  const value = read(env, name, '');
  if (value.length > max || [...value].some((c) => c < ' ' || c === '\x7f')) {
    throw new ConfigError(name, `must be at most ${max} characters, without control characters`);
  }
  return value === '' ? null : value;
}

function integer(env: Env, name: string, fallback: string, min: number, max: number): number {
  const text = read(env, name, fallback);
  const value = Number(text);
  if (!/^\d+$/.test(text) || value < min || value > max) {
    throw new ConfigError(name, `must be an integer from ${min} to ${max} (got "${text}")`);
  }
  return value;
}

/**
 * The longest duration any variable takes: ten years. Durations are added to the clock to
 * make stored deadlines (retries, dunning steps, expiry cut-offs); a bound far above any
 * sane setting keeps every such sum inside the stored range (src/shared/timestamps.ts)
 * instead of overflowing into year 10000 or past what a Date can hold.
 */
const MAX_DURATION_MS = 3650 * 86_400_000;

function duration(env: Env, name: string, fallback: string, minMs = 1): number {
  const text = read(env, name, fallback);
  // A bare `0` needs no unit where zero is allowed (INVOICE_FINALIZE_DELAY=0: at once).
  const ms = minMs === 0 && text.trim() === '0' ? 0 : parseDuration(text);
  if (ms === undefined || ms < minMs) {
    throw new ConfigError(name, `must be a duration such as 250ms, 5s, 5m, 2h or 3d (got "${text}")`);
  }
  if (ms > MAX_DURATION_MS) throw new ConfigError(name, `must be at most 3650d (got "${text}")`);
  return ms;
}

/**
 * A comma-separated list of positive durations in ms. `order` is the rule between steps:
 * `ascending` for offsets from one start (dunning steps: two equal offsets would be one
 * step twice), `non-decreasing` for delays between attempts (a fixed-interval retry
 * schedule such as `5m,5m,5m` is normal; a shrinking one is a typo).
 */
function durationList(env: Env, name: string, fallback: string, order: 'ascending' | 'non-decreasing'): number[] {
  const text = read(env, name, fallback);
  const list = parseDurationList(text);
  if (list === undefined) {
    throw new ConfigError(name, `must be a comma-separated list of durations such as 5s,5m,2h (got "${text}")`);
  }
  if (list.some((ms) => ms <= 0)) {
    throw new ConfigError(name, `must list positive durations (got "${text}")`);
  }
  if (list.some((ms) => ms > MAX_DURATION_MS)) {
    throw new ConfigError(name, `must list durations of at most 3650d (got "${text}")`);
  }
  const outOfOrder = list.some((ms, i) =>
    i === 0 ? false : order === 'ascending' ? ms <= list[i - 1]! : ms < list[i - 1]!,
  );
  if (outOfOrder) {
    const rule = order === 'ascending' ? 'in ascending order' : 'in non-decreasing order (equal steps allowed)';
    throw new ConfigError(name, `must list durations ${rule} (got "${text}")`);
  }
  return list;
}

function csv(env: Env, name: string): string[] {
  return read(env, name, '')
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');
}

/** True for an absolute http:// or https:// URL without credentials, query or fragment. */
function isHttpOrigin(text: string): boolean {
  try {
    const url = new URL(text);
    return (
      (url.protocol === 'http:' || url.protocol === 'https:') &&
      url.username === '' &&
      url.password === '' &&
      url.search === '' &&
      url.hash === ''
    );
  } catch {
    return false;
  }
}

/** The origin of `text` (an http(s) URL whose path is `/` or empty), or undefined. */
function originOnly(text: string): string | undefined {
  if (!isHttpOrigin(text)) return undefined;
  const url = new URL(text);
  return url.pathname === '/' ? url.origin : undefined;
}

/**
 * The provider API settings of SPEC §10. Key values are never echoed in an error: a
 * ConfigError is printed at start, and a key pasted into the wrong variable is still a key.
 */
function collectionConfig(env: Env) {
  const paystackSecretKey = read(env, 'PAYSTACK_SECRET_KEY', '');
  const stripeApiKey = read(env, 'STRIPE_API_KEY', '');
  if (stripeApiKey !== '' && !/^(sk|rk)_[A-Za-z0-9_]+$/.test(stripeApiKey)) {
    throw new ConfigError('STRIPE_API_KEY', 'must be a Stripe secret key (sk_…) or restricted key (rk_…)');
  }
  const paystackApiUrl = read(env, 'PAYSTACK_API_URL', 'https://api.paystack.co');
  if (!isHttpOrigin(paystackApiUrl)) {
    throw new ConfigError('PAYSTACK_API_URL', `must be an http:// or https:// URL (got "${paystackApiUrl}")`);
  }
  const stripeUrl = read(env, 'STRIPE_API_URL', 'https://api.stripe.com');
  const stripeApiUrl = originOnly(stripeUrl);
  if (stripeApiUrl === undefined) {
    throw new ConfigError(
      'STRIPE_API_URL',
      `must be an http:// or https:// origin without a path (got "${stripeUrl}")`,
    );
  }
  // "Default: the one configured": Stripe when only Stripe has a key, otherwise Paystack.
  const implied: ProviderName = stripeApiKey !== '' && paystackSecretKey === '' ? 'stripe' : 'paystack';
  const defaultProvider = read(env, 'DEFAULT_PROVIDER', implied);
  if (!isProviderName(defaultProvider)) {
    throw new ConfigError('DEFAULT_PROVIDER', `must be ${PROVIDER_NAMES.join(' or ')} (got "${defaultProvider}")`);
  }
  const keyVariable = defaultProvider === 'stripe' ? 'STRIPE_API_KEY' : 'PAYSTACK_SECRET_KEY';
  if (env.DEFAULT_PROVIDER?.trim() && (defaultProvider === 'stripe' ? stripeApiKey : paystackSecretKey) === '') {
    throw new ConfigError('DEFAULT_PROVIDER', `is ${defaultProvider} but ${keyVariable} is not set`);
  }
  const dataEncryptionKeys = encryptionKeys(env);
  if (dataEncryptionKeys.length === 0 && (paystackSecretKey !== '' || stripeApiKey !== '')) {
    throw new ConfigError(
      'DATA_ENCRYPTION_KEY',
      `must be set when ${paystackSecretKey !== '' ? 'PAYSTACK_SECRET_KEY' : 'STRIPE_API_KEY'} is: saved payment methods are stored encrypted with it (32 random bytes, base64 or hex; e.g. \`openssl rand -base64 32\`; DATA_ENCRYPTION_KEYS during a rotation)`,
    );
  }
  return {
    paystackSecretKey,
    paystackApiUrl: paystackApiUrl.replace(/\/+$/, ''),
    stripeApiKey,
    stripeApiUrl,
    defaultProvider,
    providerTimeoutMs: duration(env, 'PROVIDER_TIMEOUT', '30s'),
    dataEncryptionKeys: Object.freeze(dataEncryptionKeys),
    dataEncryptionKey: dataEncryptionKeys[0],
  };
}

/** One key's 32 bytes from 64 hex digits or base64/base64url; undefined when malformed. */
function parseEncryptionKey(text: string): Buffer | undefined {
  let key: Buffer | undefined;
  if (/^[0-9a-fA-F]{64}$/.test(text)) key = Buffer.from(text, 'hex');
  else if (/^[A-Za-z0-9+/_-]{43}=?$/.test(text)) key = Buffer.from(text, 'base64');
  return key?.length === 32 ? key : undefined;
}

/**
 * The data encryption keys, newest first (SPEC §10 "Saved payment methods"):
 * DATA_ENCRYPTION_KEYS (comma-separated) or DATA_ENCRYPTION_KEY (one key, the same as a list
 * of one). Each is 32 bytes as 64 hex digits or base64/base64url. Empty when neither is set.
 * Throws ConfigError (naming a key by its position, never echoing a value) when a key is
 * malformed, a key is listed twice, or both variables are set.
 */
function encryptionKeys(env: Env): Buffer[] {
  const one = read(env, 'DATA_ENCRYPTION_KEY', '');
  const list = csv(env, 'DATA_ENCRYPTION_KEYS');
  const format = '32 bytes as 64 hex digits or base64 (e.g. `openssl rand -base64 32`)';
  if (list.length === 0) {
    if (one === '') return [];
    const key = parseEncryptionKey(one);
    if (!key) throw new ConfigError('DATA_ENCRYPTION_KEY', `must be ${format}`);
    return [key];
  }
  if (one !== '') {
    throw new ConfigError(
      'DATA_ENCRYPTION_KEYS',
      'and DATA_ENCRYPTION_KEY are both set: set only DATA_ENCRYPTION_KEYS, listing every key newest first',
    );
  }
  const keys = list.map((text, i) => {
    const key = parseEncryptionKey(text);
    if (!key) throw new ConfigError('DATA_ENCRYPTION_KEYS', `key ${i + 1} must be ${format}`);
    return key;
  });
  keys.forEach((key, i) => {
    const first = keys.findIndex((other) => other.equals(key));
    if (first !== i)
      throw new ConfigError('DATA_ENCRYPTION_KEYS', `lists the same key twice (keys ${first + 1} and ${i + 1})`);
  });
  return keys;
}

function databaseConfig(env: Env): DatabaseConfig {
  const url = read(env, 'DATABASE_URL', 'sqlite:./data/billing.db');
  if (url.startsWith('postgres://') || url.startsWith('postgresql://')) {
    try {
      new URL(url);
    } catch {
      throw new ConfigError('DATABASE_URL', 'is not a valid postgres:// URL');
    }
    return { kind: 'postgres', url };
  }
  if (url.startsWith('sqlite:')) {
    const path = url.slice('sqlite:'.length);
    if (path === '') throw new ConfigError('DATABASE_URL', 'needs a path after sqlite: (or sqlite::memory:)');
    return { kind: 'sqlite', path };
  }
  throw new ConfigError('DATABASE_URL', 'must start with sqlite:, postgres:// or postgresql://');
}

/**
 * Reads and validates every variable of SPEC §1 from `env` (default `process.env`).
 * Returns a frozen Config. Throws ConfigError naming the first bad variable.
 */
export function loadConfig(env: Env = process.env): Readonly<Config> {
  const logLevel = read(env, 'LOG_LEVEL', 'info');
  if (!(LOG_LEVELS as readonly string[]).includes(logLevel)) {
    throw new ConfigError('LOG_LEVEL', `must be one of ${LOG_LEVELS.join(', ')} (got "${logLevel}")`);
  }
  const finalAction = read(env, 'DUNNING_FINAL_ACTION', 'cancel');
  if (finalAction !== 'cancel' && finalAction !== 'unpaid') {
    throw new ConfigError('DUNNING_FINAL_ACTION', `must be cancel or unpaid (got "${finalAction}")`);
  }
  const cidrs = csv(env, 'WEBHOOK_ALLOW_PRIVATE_CIDRS');
  for (const cidr of cidrs) {
    try {
      ipaddr.parseCIDR(cidr);
    } catch {
      throw new ConfigError('WEBHOOK_ALLOW_PRIVATE_CIDRS', `has an invalid CIDR "${cidr}"`);
    }
  }
  const redisUrl = read(env, 'REDIS_URL', '');
  if (redisUrl !== '' && !/^rediss?:\/\/[^\s]+$/.test(redisUrl)) {
    throw new ConfigError('REDIS_URL', 'must be a redis:// or rediss:// URL');
  }
  const apiKeys = csv(env, 'API_KEYS');
  if (apiKeys.some((key) => key.length < 16)) {
    throw new ConfigError('API_KEYS', 'must hold keys of at least 16 characters each');
  }
  const metricsPort = read(env, 'METRICS_PORT', '');
  const port = integer(env, 'PORT', '3000', 0, 65535);
  const host = read(env, 'HOST', '127.0.0.1');
  const invoicePrefix = read(env, 'INVOICE_PREFIX', 'INV');
  if (!/^[A-Za-z0-9]{1,16}$/.test(invoicePrefix)) {
    throw new ConfigError('INVOICE_PREFIX', `must be 1 to 16 letters or digits (got "${invoicePrefix}")`);
  }
  const defaultTaxRateIds = [...new Set(csv(env, 'DEFAULT_TAX_RATE_IDS'))];
  const badTaxRate = defaultTaxRateIds.find((id) => !/^txr_[0-9A-HJKMNP-TV-Z]{26}$/.test(id));
  if (badTaxRate !== undefined) {
    throw new ConfigError(
      'DEFAULT_TAX_RATE_IDS',
      `must list tax rate ids (txr_…), comma-separated (got "${badTaxRate}")`,
    );
  }
  const publicUrl = read(env, 'PUBLIC_URL', `http://${host.includes(':') ? `[${host}]` : host}:${port}`);
  if (!isHttpOrigin(publicUrl)) {
    throw new ConfigError('PUBLIC_URL', `must be an http:// or https:// URL (got "${publicUrl}")`);
  }
  const testClocks = read(env, 'TEST_CLOCKS', 'false');
  if (testClocks !== 'true' && testClocks !== 'false') {
    throw new ConfigError('TEST_CLOCKS', `must be true or false (got "${testClocks}")`);
  }
  const businessName = read(env, 'BUSINESS_NAME', 'Billing');
  if (businessName.length > 200 || [...businessName].some((c) => c < ' ' || c === '\x7f')) {
    throw new ConfigError('BUSINESS_NAME', 'must be at most 200 characters, without control characters');
  }
  const businessAddress = printable(env, 'BUSINESS_ADDRESS', 500);
  const portalPlans = [...new Set(csv(env, 'PORTAL_PLANS'))];
  const badPlan = portalPlans.find((id) => !/^plan_[0-9A-HJKMNP-TV-Z]{26}$/.test(id));
  if (badPlan !== undefined) {
    throw new ConfigError('PORTAL_PLANS', `must list plan ids (plan_…), comma-separated (got "${badPlan}")`);
  }
  const businessTaxId = printable(env, 'BUSINESS_TAX_ID', 64);
  const businessLogo = readBusinessLogo(env);

  return Object.freeze({
    port,
    host,
    database: databaseConfig(env),
    apiKeys: Object.freeze(apiKeys),
    stripeWebhookSecret: read(env, 'STRIPE_WEBHOOK_SECRET', ''),
    ...collectionConfig(env),
    webhookAllowPrivateCidrs: Object.freeze(cidrs),
    webhookRetryScheduleMs: Object.freeze(
      durationList(env, 'WEBHOOK_RETRY_SCHEDULE', '5s,5m,30m,2h,5h,10h,14h,20h,24h', 'non-decreasing'),
    ),
    webhookTimeoutMs: duration(env, 'WEBHOOK_TIMEOUT', '10s'),
    dunningScheduleMs: Object.freeze(durationList(env, 'DUNNING_SCHEDULE', '1d,3d,7d,14d', 'ascending')),
    dunningFinalAction: finalAction,
    subscriptionIncompleteTtlMs: duration(env, 'SUBSCRIPTION_INCOMPLETE_TTL', '23h'),
    renewalGraceMs: duration(env, 'RENEWAL_GRACE', '1h', 0),
    invoiceFinalizeDelayMs: duration(env, 'INVOICE_FINALIZE_DELAY', '1h', 0),
    workerPollIntervalMs: duration(env, 'WORKER_POLL_INTERVAL', '1s'),
    rateLimitMax: integer(env, 'RATE_LIMIT_MAX', '100', 0, 1_000_000_000),
    rateLimitWindowMs: duration(env, 'RATE_LIMIT_WINDOW', '1s'),
    redisUrl: redisUrl === '' ? undefined : redisUrl,
    logLevel: logLevel as LogLevel,
    metricsPort: metricsPort === '' ? undefined : integer(env, 'METRICS_PORT', '', 1, 65535),
    responseCacheBytes: integer(env, 'RESPONSE_CACHE_MB', '0', 0, 65_536) * 1_048_576,
    invoicePrefix,
    defaultTaxRateIds,
    publicUrl: publicUrl.replace(/\/+$/, ''),
    businessName,
    businessAddress,
    businessTaxId,
    businessLogo,
    testClocks: testClocks === 'true',
    portalPlans: Object.freeze(portalPlans),
    consoleIdleTimeoutMs: duration(env, 'CONSOLE_IDLE_TIMEOUT', '30m', 60_000),
  });
}
