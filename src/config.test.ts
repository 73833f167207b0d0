import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { BUSINESS_LOGO_MAX_BYTES, ConfigError, loadConfig } from './config.ts';
import { temporaryFile, TINY_PNG } from '../test/helpers/documents.ts';

/** A valid DATA_ENCRYPTION_KEY (32 bytes as hex). */
const DEK = '0f'.repeat(32);

test('defaults follow SPEC §1', () => {
  const config = loadConfig({});
  assert.equal(config.port, 3000);
  assert.equal(config.host, '127.0.0.1');
  assert.deepEqual(config.database, { kind: 'sqlite', path: './data/billing.db' });
  assert.deepEqual(config.apiKeys, []);
  assert.deepEqual(config.webhookRetryScheduleMs, [5e3, 3e5, 18e5, 72e5, 18e6, 36e6, 504e5, 72e6, 864e5]);
  assert.equal(config.webhookTimeoutMs, 10_000);
  assert.deepEqual(
    config.dunningScheduleMs,
    [1, 3, 7, 14].map((d) => d * 86_400_000),
  );
  assert.equal(config.dunningFinalAction, 'cancel');
  assert.equal(config.subscriptionIncompleteTtlMs, 23 * 3_600_000);
  assert.equal(config.renewalGraceMs, 3_600_000);
  assert.equal(config.workerPollIntervalMs, 1000);
  assert.equal(config.rateLimitMax, 100);
  assert.equal(config.rateLimitWindowMs, 1000);
  assert.equal(config.redisUrl, undefined);
  assert.equal(config.logLevel, 'info');
  assert.equal(config.metricsPort, undefined);
  assert.ok(Object.isFrozen(config));
});

test('every variable is parsed', () => {
  const config = loadConfig({
    PORT: '8080',
    HOST: '0.0.0.0',
    DATABASE_URL: 'postgresql://u:p@db:5432/billing',
    API_KEYS: 'aaaaaaaaaaaaaaaa, bbbbbbbbbbbbbbbb',
    PAYSTACK_SECRET_KEY: 'sk_test_x',
    DATA_ENCRYPTION_KEY: DEK,
    STRIPE_WEBHOOK_SECRET: 'whsec_x',
    WEBHOOK_ALLOW_PRIVATE_CIDRS: '127.0.0.0/8, ::1/128',
    WEBHOOK_RETRY_SCHEDULE: '1s,2m',
    WEBHOOK_TIMEOUT: '250ms',
    DUNNING_SCHEDULE: '2d',
    DUNNING_FINAL_ACTION: 'unpaid',
    SUBSCRIPTION_INCOMPLETE_TTL: '1h',
    RENEWAL_GRACE: '0s',
    WORKER_POLL_INTERVAL: '100ms',
    RATE_LIMIT_MAX: '0',
    RATE_LIMIT_WINDOW: '1m',
    REDIS_URL: 'redis://127.0.0.1:6379',
    LOG_LEVEL: 'warn',
    METRICS_PORT: '9100',
  });
  assert.equal(config.port, 8080);
  assert.deepEqual(config.database, { kind: 'postgres', url: 'postgresql://u:p@db:5432/billing' });
  assert.deepEqual(config.apiKeys, ['aaaaaaaaaaaaaaaa', 'bbbbbbbbbbbbbbbb']);
  assert.deepEqual(config.webhookAllowPrivateCidrs, ['127.0.0.0/8', '::1/128']);
  assert.deepEqual(config.webhookRetryScheduleMs, [1000, 120_000]);
  assert.equal(config.webhookTimeoutMs, 250);
  assert.equal(config.dunningFinalAction, 'unpaid');
  assert.equal(config.renewalGraceMs, 0);
  assert.equal(config.rateLimitMax, 0);
  assert.equal(config.rateLimitWindowMs, 60_000);
  assert.equal(config.redisUrl, 'redis://127.0.0.1:6379');
  assert.equal(config.metricsPort, 9100);
  assert.deepEqual(loadConfig({ DATABASE_URL: 'sqlite::memory:' }).database, {
    kind: 'sqlite',
    path: ':memory:',
  });
});

test('a bad value names its variable', () => {
  const bad: Record<string, string> = {
    PORT: 'abc',
    DATABASE_URL: 'mysql://x',
    API_KEYS: 'short',
    WEBHOOK_ALLOW_PRIVATE_CIDRS: '10.0.0.0/99',
    WEBHOOK_RETRY_SCHEDULE: '5s,soon',
    WEBHOOK_TIMEOUT: '10 seconds',
    DUNNING_SCHEDULE: '',
    DUNNING_FINAL_ACTION: 'delete',
    SUBSCRIPTION_INCOMPLETE_TTL: '1.5h',
    RENEWAL_GRACE: '-1h',
    WORKER_POLL_INTERVAL: '0ms',
    RATE_LIMIT_MAX: '-1',
    RATE_LIMIT_WINDOW: 'x',
    REDIS_URL: 'http://redis',
    LOG_LEVEL: 'loud',
    METRICS_PORT: '70000',
  };
  for (const [name, value] of Object.entries(bad)) {
    if (value === '') continue; // empty means "use the default"
    assert.throws(
      () => loadConfig({ [name]: value }),
      (error: unknown) => error instanceof ConfigError && error.variable === name && error.message.startsWith(name),
      name,
    );
  }
});

test('schedules must list positive durations', () => {
  for (const name of ['DUNNING_SCHEDULE', 'WEBHOOK_RETRY_SCHEDULE']) {
    for (const value of ['0s,1d', '1d,0s']) {
      assert.throws(
        () => loadConfig({ [name]: value }),
        (error: unknown) => error instanceof ConfigError && error.variable === name && /positive/.test(error.message),
        `${name}=${value}`,
      );
    }
  }
});

test('durations are at most 3650d, so deadlines computed from them stay storable', () => {
  for (const [name, value] of [
    ['SUBSCRIPTION_INCOMPLETE_TTL', '3651d'],
    ['RENEWAL_GRACE', '999999999d'],
    ['DUNNING_SCHEDULE', '1d,999999999d'],
    ['WEBHOOK_RETRY_SCHEDULE', '5s,3651d'],
  ] as const) {
    assert.throws(
      () => loadConfig({ [name]: value }),
      (error: unknown) => error instanceof ConfigError && error.variable === name && /3650d/.test(error.message),
      `${name}=${value}`,
    );
  }
  assert.equal(loadConfig({ RENEWAL_GRACE: '3650d' }).renewalGraceMs, 3650 * 86_400_000);
});

test('INVOICE_FINALIZE_DELAY: 1h by default, any duration, and 0 (with or without a unit) finalizes drafts at once', () => {
  assert.equal(loadConfig({}).invoiceFinalizeDelayMs, 3_600_000);
  assert.equal(loadConfig({ INVOICE_FINALIZE_DELAY: '30m' }).invoiceFinalizeDelayMs, 1_800_000);
  assert.equal(loadConfig({ INVOICE_FINALIZE_DELAY: '0' }).invoiceFinalizeDelayMs, 0);
  assert.equal(loadConfig({ INVOICE_FINALIZE_DELAY: '0s' }).invoiceFinalizeDelayMs, 0);
  for (const value of ['-1h', 'soon', '01']) {
    assert.throws(
      () => loadConfig({ INVOICE_FINALIZE_DELAY: value }),
      (error: unknown) => error instanceof ConfigError && error.variable === 'INVOICE_FINALIZE_DELAY',
      value,
    );
  }
});

test('DUNNING_SCHEDULE offsets must be strictly ascending', () => {
  for (const value of ['3d,1d', '1d,1d', '1d,3d,3d']) {
    assert.throws(
      () => loadConfig({ DUNNING_SCHEDULE: value }),
      (error: unknown) =>
        error instanceof ConfigError && error.variable === 'DUNNING_SCHEDULE' && /ascending/.test(error.message),
      value,
    );
  }
  assert.deepEqual(loadConfig({ DUNNING_SCHEDULE: '1h,2d' }).dunningScheduleMs, [3_600_000, 172_800_000]);
});

test('WEBHOOK_RETRY_SCHEDULE delays must be non-decreasing; a fixed interval such as 5m,5m,5m is valid', () => {
  assert.deepEqual(
    loadConfig({ WEBHOOK_RETRY_SCHEDULE: '5m,5m,5m' }).webhookRetryScheduleMs,
    [300_000, 300_000, 300_000],
  );
  assert.deepEqual(
    loadConfig({ WEBHOOK_RETRY_SCHEDULE: '5s,5m,5m,1h' }).webhookRetryScheduleMs,
    [5_000, 300_000, 300_000, 3_600_000],
  );
  for (const value of ['3d,1d', '5m,5m,1m']) {
    assert.throws(
      () => loadConfig({ WEBHOOK_RETRY_SCHEDULE: value }),
      (error: unknown) =>
        error instanceof ConfigError &&
        error.variable === 'WEBHOOK_RETRY_SCHEDULE' &&
        /non-decreasing/.test(error.message),
      value,
    );
  }
});

test('the process stops with exit code 78 and one line naming the variable', () => {
  const result = spawnSync(process.execPath, ['src/main.ts'], {
    env: { ...process.env, PORT: 'not-a-port', DATABASE_URL: 'sqlite::memory:' },
    encoding: 'utf8',
  });
  assert.equal(result.status, 78);
  assert.equal(result.stderr.trim().split('\n').length, 1);
  assert.match(result.stderr, /PORT must be an integer/);
  assert.doesNotMatch(result.stderr, /at .*\.ts/);
});

test('RESPONSE_CACHE_MB: 0 (no bodies kept) by default, a size turns the cache on, anything else but 0–65536 stops the start', () => {
  assert.equal(loadConfig({}).responseCacheBytes, 0);
  assert.equal(loadConfig({ RESPONSE_CACHE_MB: '16' }).responseCacheBytes, 16 * 1_048_576);
  assert.equal(loadConfig({ RESPONSE_CACHE_MB: '0' }).responseCacheBytes, 0);
  assert.equal(loadConfig({ RESPONSE_CACHE_MB: '256' }).responseCacheBytes, 256 * 1_048_576);
  for (const bad of ['-1', '1.5', '16MB', '65537']) {
    assert.throws(
      () => loadConfig({ RESPONSE_CACHE_MB: bad }),
      (error: unknown) => error instanceof ConfigError && error.variable === 'RESPONSE_CACHE_MB',
      bad,
    );
  }
});

test('collection (SPEC §10): provider API URLs, STRIPE_API_KEY, DEFAULT_PROVIDER (the one configured) and PROVIDER_TIMEOUT', () => {
  const defaults = loadConfig({});
  assert.equal(defaults.paystackApiUrl, 'https://api.paystack.co');
  assert.equal(defaults.stripeApiUrl, 'https://api.stripe.com');
  assert.equal(defaults.stripeApiKey, '');
  assert.equal(defaults.defaultProvider, 'paystack');
  assert.equal(defaults.providerTimeoutMs, 30_000);

  const set = loadConfig({
    PAYSTACK_API_URL: 'http://127.0.0.1:4010/',
    STRIPE_API_KEY: 'sk_test_abc123',
    DATA_ENCRYPTION_KEY: DEK,
    STRIPE_API_URL: 'http://127.0.0.1:12111',
    PROVIDER_TIMEOUT: '5s',
  });
  assert.equal(set.paystackApiUrl, 'http://127.0.0.1:4010');
  assert.equal(set.stripeApiUrl, 'http://127.0.0.1:12111');
  assert.equal(set.stripeApiKey, 'sk_test_abc123');
  assert.equal(set.defaultProvider, 'stripe', 'only Stripe has a key');
  assert.equal(set.providerTimeoutMs, 5000);
  assert.equal(
    loadConfig({ STRIPE_API_KEY: 'rk_live_x1', PAYSTACK_SECRET_KEY: 'sk_test_p', DATA_ENCRYPTION_KEY: DEK })
      .defaultProvider,
    'paystack',
  );
  assert.equal(
    loadConfig({
      STRIPE_API_KEY: 'sk_test_x',
      PAYSTACK_SECRET_KEY: 'sk_test_p',
      DEFAULT_PROVIDER: 'stripe',
      DATA_ENCRYPTION_KEY: DEK,
    }).defaultProvider,
    'stripe',
  );
});

test('collection variables that cannot work name themselves, and a key is never echoed', () => {
  const secret = 'whsec_pasted_into_the_wrong_variable';
  for (const [env, variable] of [
    [{ STRIPE_API_KEY: secret }, 'STRIPE_API_KEY'],
    [{ STRIPE_API_KEY: 'pk_test_publishable' }, 'STRIPE_API_KEY'],
    [{ PAYSTACK_API_URL: 'ftp://api.paystack.co' }, 'PAYSTACK_API_URL'],
    [{ STRIPE_API_URL: 'https://api.stripe.com/v1' }, 'STRIPE_API_URL'],
    [{ STRIPE_API_URL: 'not a url' }, 'STRIPE_API_URL'],
    [{ DEFAULT_PROVIDER: 'paypal' }, 'DEFAULT_PROVIDER'],
    [{ DEFAULT_PROVIDER: 'stripe', PAYSTACK_SECRET_KEY: 'sk_test_p' }, 'DEFAULT_PROVIDER'],
    [{ PROVIDER_TIMEOUT: '30 seconds' }, 'PROVIDER_TIMEOUT'],
    [{ PROVIDER_TIMEOUT: '0s' }, 'PROVIDER_TIMEOUT'],
  ] as const) {
    assert.throws(
      () => loadConfig(env),
      (error: unknown) =>
        error instanceof ConfigError &&
        error.variable === variable &&
        error.message.startsWith(variable) &&
        !error.message.includes(secret),
      JSON.stringify(env),
    );
  }
  assert.throws(() => loadConfig({ DEFAULT_PROVIDER: 'stripe' }), /STRIPE_API_KEY is not set/);
});

test('DATA_ENCRYPTION_KEY: required with a provider key, 32 bytes as hex or base64, never echoed', () => {
  const base64 = Buffer.alloc(32, 7).toString('base64');
  assert.equal(loadConfig({}).dataEncryptionKey, undefined, 'optional without a provider key');
  assert.deepEqual(loadConfig({ DATA_ENCRYPTION_KEY: DEK }).dataEncryptionKey, Buffer.alloc(32, 0x0f));
  assert.deepEqual(loadConfig({ DATA_ENCRYPTION_KEY: base64 }).dataEncryptionKey, Buffer.alloc(32, 7));
  assert.deepEqual(
    loadConfig({ DATA_ENCRYPTION_KEY: base64.replace(/=$/, '').replaceAll('+', '-').replaceAll('/', '_') })
      .dataEncryptionKey,
    Buffer.alloc(32, 7),
    'base64url without padding',
  );
  for (const [env, names] of [
    [{ PAYSTACK_SECRET_KEY: 'sk_test_p' }, /PAYSTACK_SECRET_KEY/],
    [{ STRIPE_API_KEY: 'sk_test_s' }, /STRIPE_API_KEY/],
  ] as const) {
    assert.throws(
      () => loadConfig(env),
      (error: unknown) =>
        error instanceof ConfigError && error.variable === 'DATA_ENCRYPTION_KEY' && names.test(error.message),
    );
  }
  const pasted = 'sk_live_this_is_not_an_encryption_key_0123';
  for (const bad of [pasted, 'ab'.repeat(31), 'ab'.repeat(33), Buffer.alloc(16).toString('base64')]) {
    assert.throws(
      () => loadConfig({ DATA_ENCRYPTION_KEY: bad }),
      (error: unknown) =>
        error instanceof ConfigError && error.variable === 'DATA_ENCRYPTION_KEY' && !error.message.includes(bad),
      bad,
    );
  }
});

test('DATA_ENCRYPTION_KEYS: newest first, each opens, the first encrypts; DATA_ENCRYPTION_KEY is a list of one', () => {
  const [a, b] = [Buffer.alloc(32, 1), Buffer.alloc(32, 2)];
  const config = loadConfig({ DATA_ENCRYPTION_KEYS: `${a.toString('base64')}, ${b.toString('hex')}` });
  assert.deepEqual(config.dataEncryptionKeys, [a, b]);
  assert.deepEqual(config.dataEncryptionKey, a, 'new secrets use the newest');
  const single = loadConfig({ DATA_ENCRYPTION_KEY: DEK });
  assert.deepEqual(single.dataEncryptionKeys, [Buffer.alloc(32, 0x0f)]);
  assert.deepEqual(single.dataEncryptionKey, Buffer.alloc(32, 0x0f));
  assert.deepEqual(loadConfig({}).dataEncryptionKeys, []);
  assert.ok(
    loadConfig({ PAYSTACK_SECRET_KEY: 'sk_test_p', DATA_ENCRYPTION_KEYS: DEK }),
    'a list satisfies a provider key',
  );
  const secret = Buffer.alloc(32, 9).toString('base64');
  for (const [env, message] of [
    [
      { DATA_ENCRYPTION_KEYS: `${a.toString('base64')},${secret.slice(0, 20)}` },
      /^DATA_ENCRYPTION_KEYS key 2 must be 32 bytes/,
    ],
    [{ DATA_ENCRYPTION_KEYS: `${secret},${a.toString('base64')},${secret}` }, /same key twice \(keys 1 and 3\)/],
    [{ DATA_ENCRYPTION_KEYS: secret, DATA_ENCRYPTION_KEY: secret }, /DATA_ENCRYPTION_KEY are both set/],
  ] as const) {
    assert.throws(
      () => loadConfig(env),
      (error: unknown) =>
        error instanceof ConfigError &&
        error.variable === 'DATA_ENCRYPTION_KEYS' &&
        message.test(error.message) &&
        !error.message.includes(secret) &&
        !error.message.includes(secret.slice(0, 20)),
    );
  }
});

test('PORTAL_PLANS: plan ids, comma-separated, duplicates once; empty offers none; anything else names the variable', () => {
  assert.deepEqual(loadConfig({}).portalPlans, []);
  const a = 'plan_01JD3Q7Z8X9Y0A1B2C3D4E5F6G';
  const b = 'plan_01JD3Q7Z8X9Y0A1B2C3D4E5F6H';
  assert.deepEqual(loadConfig({ PORTAL_PLANS: ` ${a}, ${b},${a} ` }).portalPlans, [a, b]);
  for (const value of ['cus_01JD3Q7Z8X9Y0A1B2C3D4E5F6G', 'plan_x', `${a};${b}`, `plan_01jd3q7z8x9y0a1b2c3d4e5f6g`]) {
    assert.throws(
      () => loadConfig({ PORTAL_PLANS: value }),
      (error: unknown) => error instanceof ConfigError && error.variable === 'PORTAL_PLANS',
      value,
    );
  }
});

test('BUSINESS_LOGO_PATH: a PNG or JPEG read once, by its bytes; missing, other or too large files stop start-up naming the path', (t) => {
  assert.equal(loadConfig({}).businessLogo, null);
  const png = temporaryFile(t, 'logo.png', TINY_PNG);
  assert.deepEqual(loadConfig({ BUSINESS_LOGO_PATH: png }).businessLogo, { bytes: TINY_PNG, mediaType: 'image/png' });
  const jpeg = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 0x10, 0x4a, 0x46, 0x49, 0x46]);
  // The name does not decide: a JPEG called .png is a JPEG.
  const misnamed = temporaryFile(t, 'logo.png', jpeg);
  assert.equal(loadConfig({ BUSINESS_LOGO_PATH: misnamed }).businessLogo?.mediaType, 'image/jpeg');
  const refusals: [string, RegExp][] = [
    ['/nonexistent/logo.png', /^BUSINESS_LOGO_PATH cannot be read \(ENOENT\): \/nonexistent\/logo\.png$/],
    [
      temporaryFile(t, 'logo.svg', Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"/>')),
      /must be a PNG or JPEG file: .*logo\.svg is neither/,
    ],
    [
      temporaryFile(t, 'big.png', Buffer.concat([TINY_PNG, Buffer.alloc(BUSINESS_LOGO_MAX_BYTES)])),
      /must be at most 256 KiB \(.*big\.png is 257 KiB\)/,
    ],
  ];
  for (const [path, message] of refusals) {
    assert.throws(
      () => loadConfig({ BUSINESS_LOGO_PATH: path }),
      (error: unknown) =>
        error instanceof ConfigError && error.variable === 'BUSINESS_LOGO_PATH' && message.test(error.message),
      path,
    );
  }
});
