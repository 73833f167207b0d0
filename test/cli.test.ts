// The `billing` CLI (SPEC §1). A real process through bin/billing.js where the process is
// the point (its stdout and stderr, exit codes, signals); otherwise runCli in this process,
// with its own environment and output (a process start costs more than the command).
//
// Database: a SQLite file in a fresh temp dir, in BOTH test passes (also when
// TEST_DATABASE_URL names PostgreSQL). The CLI takes its database from DATABASE_URL only and
// cannot be pointed at a per-test PostgreSQL schema, and its logic is dialect-agnostic: the
// dialect-specific SQL it runs is the same the route tests cover on both databases.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, type TestContext, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { buildApp } from '../src/app.ts';
import { runCli } from '../src/cli.ts';
import { COMMAND_HELP, KEYS_HELP } from '../src/cli/help.ts';
import { loadConfig } from '../src/config.ts';
import { createDeps } from '../src/deps.ts';
import { createCustomer } from '../src/modules/customers/customers.service.ts';
import { findPaymentMethodToCharge } from '../src/modules/payment-methods/payment-methods.ts';
import { VERSION } from '../src/shared/version.ts';
import { saveTestCard } from './helpers/payment-methods.ts';
import { SHARED_SCHEMA_COMPILERS } from './helpers/schema-compilers.ts';

const BIN = fileURLToPath(new URL('../bin/billing.js', import.meta.url));
const UNAUTHORIZED = '{"code":"authentication_error","message":"unauthorized","details":null}';

interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** A fresh SQLite file database (not created yet) in its own temp dir, removed after the test. */
function tempDatabaseUrl(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'billing-cli-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return `sqlite:${join(dir, 'billing.db')}`;
}

/** The environment of a `billing` run: only `env` (plus PATH), as a user's shell would give. */
function cliEnv(env: Record<string, string>): Record<string, string> {
  const cache = process.env.NODE_COMPILE_CACHE; // start-up speed only (scripts/test.ts)
  return { PATH: process.env.PATH ?? '', LOG_LEVEL: 'silent', ...(cache ? { NODE_COMPILE_CACHE: cache } : {}), ...env };
}

/**
 * Runs `billing …args` in this process (runCli, as bin/billing.js calls it), with only the
 * given environment; an error runCli throws ends as bin/billing.js ends it (exit 1).
 */
async function billing(args: string[], env: Record<string, string>): Promise<CliResult> {
  let stdout = '';
  let stderr = '';
  const io = {
    env: cliEnv(env),
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
  };
  try {
    const code = await runCli(args, io);
    return { code, stdout, stderr };
  } catch (error) {
    stderr += `billing: ${error instanceof Error ? error.message : String(error)}\n`;
    return { code: 1, stdout, stderr };
  }
}

/** Runs `billing …args` as a real process through bin/billing.js, with only the given environment. */
function billingProcess(args: string[], env: Record<string, string>): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      env: cliEnv(env),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** The API over the same database file as the CLI, on a real port; stopped after the test. */
async function startApp(t: TestContext, databaseUrl: string): Promise<(key: string) => Promise<Response>> {
  const deps = await createDeps(loadConfig({ DATABASE_URL: databaseUrl, LOG_LEVEL: 'silent', RATE_LIMIT_MAX: '0' }));
  const app = await buildApp(deps, { schemaController: SHARED_SCHEMA_COMPILERS });
  await app.listen({ port: 0, host: '127.0.0.1' });
  t.after(async () => {
    await app.close();
    await deps.close();
  });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return (key) => fetch(`http://127.0.0.1:${port}/api/customers`, { headers: { authorization: `Bearer ${key}` } });
}

/** Saves a Paystack method (credential `credential`) in the database, encrypted with `key`; returns its id. */
async function saveMethodUnder(databaseUrl: string, key: string, credential: string): Promise<{ id: string }> {
  const deps = await createDeps(loadConfig({ DATABASE_URL: databaseUrl, DATA_ENCRYPTION_KEY: key }));
  try {
    const customer = await createCustomer(deps.db, deps.clock, { email: 'ada@example.com' });
    return await deps.db
      .transaction()
      .execute((trx) => saveTestCard(trx, deps, customer.id, 'paystack', { credential }));
  } finally {
    await deps.close();
  }
}

/** Creates a key with the CLI and returns it with its id (from stderr). */
async function createKey(databaseUrl: string, extra: string[] = []): Promise<{ key: string; id: string }> {
  const result = await billing(['keys', 'create', '--name', 'demo', ...extra], { DATABASE_URL: databaseUrl });
  assert.equal(result.code, 0, result.stderr);
  const id = /\bkey_[0-9A-Z]{26}\b/.exec(result.stderr)?.[0];
  assert.ok(id, `stderr names the id: ${result.stderr}`);
  return { key: result.stdout.trimEnd(), id };
}

// Every test owns its temp database, so they run concurrently.
describe('billing CLI', { concurrency: true }, () => {
  test('keys create prints exactly one line on stdout, the key; the id goes to stderr', async (t) => {
    const databaseUrl = tempDatabaseUrl(t);
    const result = await billingProcess(['keys', 'create', '--name', 'demo'], { DATABASE_URL: databaseUrl });
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /^\S{32,}\n$/, 'one line holding only the key');
    const key = result.stdout.trimEnd();
    assert.match(result.stderr, /\bkey_[0-9A-Z]{26}\b/);
    assert.ok(!result.stderr.includes(key), 'the key is printed once, on stdout only');
  });

  test('a key created by the CLI authenticates against the API on the same database', async (t) => {
    const databaseUrl = tempDatabaseUrl(t);
    const { key } = await createKey(databaseUrl);
    const call = await startApp(t, databaseUrl);
    const res = await call(key);
    assert.equal(res.status, 200, await res.clone().text());
    assert.equal((await call(`${key}x`)).status, 401);
  });

  test('keys create --scope read makes a key that can read but not write', async (t) => {
    const databaseUrl = tempDatabaseUrl(t);
    const { key } = await createKey(databaseUrl, ['--scope', 'read']);
    const call = await startApp(t, databaseUrl);
    assert.equal((await call(key)).status, 200);
    const port = new URL((await call(key)).url).port;
    const write = await fetch(`http://127.0.0.1:${port}/api/customers`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'a@example.com' }),
    });
    assert.equal(write.status, 403);
  });

  test('keys list shows prefix…last4 and never the full key', async (t) => {
    const databaseUrl = tempDatabaseUrl(t);
    const first = await createKey(databaseUrl);
    const second = await createKey(databaseUrl, ['--scope', 'admin']);
    const result = await billing(['keys', 'list'], { DATABASE_URL: databaseUrl });
    assert.equal(result.code, 0, result.stderr);
    const lines = result.stdout.trimEnd().split('\n');
    assert.equal(lines.length, 2);
    for (const { key, id } of [first, second]) {
      const line = lines.find((l) => l.includes(id));
      assert.ok(line, `${id} is listed`);
      assert.ok(line.includes(`${key.slice(0, 7)}…${key.slice(-4)}`), line);
      assert.ok(!result.stdout.includes(key), 'the full key is never listed');
      assert.ok(!result.stdout.includes(key.slice(0, 12)), 'no more of the key than its prefix');
    }
  });

  test('keys revoke ID makes the key stop working', async (t) => {
    const databaseUrl = tempDatabaseUrl(t);
    const { key, id } = await createKey(databaseUrl);
    const call = await startApp(t, databaseUrl);
    assert.equal((await call(key)).status, 200);
    const result = await billing(['keys', 'revoke', id], { DATABASE_URL: databaseUrl });
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, new RegExp(id));
    const res = await call(key);
    assert.equal(res.status, 401);
    assert.equal(await res.text(), UNAUTHORIZED);
    const list = await billing(['keys', 'list'], { DATABASE_URL: databaseUrl });
    assert.match(list.stdout, /\trevoked\t/);
  });

  test('keys revoke of an unknown id fails with a message and no stack', async (t) => {
    const databaseUrl = tempDatabaseUrl(t);
    const result = await billing(['keys', 'revoke', 'key_01JD3Q7Z8X9Y0A1B2C3D4E5F6G'], {
      DATABASE_URL: databaseUrl,
    });
    assert.notEqual(result.code, 0);
    assert.match(result.stderr, /not found/);
    assert.doesNotMatch(result.stderr, /\n\s+at /);
  });
  test('keys create without --name exits 64 with the usage on stderr, before touching the database', async (t) => {
    const databaseUrl = tempDatabaseUrl(t);
    const cases = [
      ['keys', 'create'],
      ['keys', 'create', '--bogus'],
      ['keys', 'create', '--name', 'x', '--scope', 'root'],
      ['keys', 'revoke'],
      ['keys', 'frob'],
    ];
    const results = await Promise.all(cases.map((args) => billing(args, { DATABASE_URL: databaseUrl })));
    for (const [i, result] of results.entries()) {
      assert.equal(result.code, 64, cases[i]?.join(' '));
      assert.equal(result.stdout, '', 'nothing that could be taken for a key');
      assert.match(result.stderr, /usage: billing/);
      assert.doesNotMatch(result.stderr, /\n\s+at /);
    }
    assert.ok(!existsSync(databaseUrl.slice('sqlite:'.length)), 'no database was created or migrated');
  });

  test('a bad config value exits 78 with one line naming the variable and no stack', async (t) => {
    const databaseUrl = tempDatabaseUrl(t);
    const cases = [
      ['PORT', { PORT: 'abc', DATABASE_URL: databaseUrl }],
      ['DATABASE_URL', { DATABASE_URL: 'mysql://localhost/billing' }],
      ['LOG_LEVEL', { LOG_LEVEL: 'loud', DATABASE_URL: databaseUrl }],
    ] as const;
    const results = await Promise.all(cases.map(([, env]) => billingProcess(['keys', 'list'], env)));
    for (const [i, result] of results.entries()) {
      const variable = cases[i]?.[0] ?? '';
      assert.equal(result.code, 78, `${variable}: ${result.stderr}`);
      assert.equal(result.stdout, '');
      const lines = result.stderr.trimEnd().split('\n');
      assert.equal(lines.length, 1, result.stderr);
      assert.match(lines[0] ?? '', new RegExp(`\\b${variable}\\b`));
    }
  });
  test('rotate-data-key re-encrypts saved methods with the first key; then the old key can go', async (t) => {
    const databaseUrl = tempDatabaseUrl(t);
    const [oldKey, newKey] = [randomBytes(32).toString('base64'), randomBytes(32).toString('base64')];
    const saved = await saveMethodUnder(databaseUrl, oldKey, 'AUTH_rotate');

    const rotated = await billing(['rotate-data-key'], {
      DATABASE_URL: databaseUrl,
      DATA_ENCRYPTION_KEYS: `${newKey},${oldKey}`,
    });
    assert.equal(rotated.code, 0, rotated.stderr);
    assert.equal(rotated.stdout, 're-encrypted 1, already under the first key 0, unreadable 0\n');
    assert.ok(!rotated.stdout.includes('AUTH_') && !rotated.stdout.includes(newKey));

    const after = await createDeps(loadConfig({ DATABASE_URL: databaseUrl, DATA_ENCRYPTION_KEY: newKey }));
    t.after(() => after.close());
    assert.equal((await findPaymentMethodToCharge(after.db, after, saved.id))?.credential, 'AUTH_rotate');

    // Without the old key, a secret still under it cannot be moved: exit 1, counted, left alone.
    const lost = await billing(['rotate-data-key'], {
      DATABASE_URL: databaseUrl,
      DATA_ENCRYPTION_KEYS: randomBytes(32).toString('hex'),
    });
    assert.equal(lost.code, 1);
    assert.equal(lost.stdout, 're-encrypted 0, already under the first key 0, unreadable 1\n');
    assert.match(lost.stderr, /^1 saved payment method credential\(s\) open with no key of DATA_ENCRYPTION_KEYS/);
    const none = await billing(['rotate-data-key'], { DATABASE_URL: databaseUrl });
    assert.equal(none.code, 78);
    assert.match(none.stderr, /DATA_ENCRYPTION_KEYS \(or DATA_ENCRYPTION_KEY\) is not set/);
  });

  test('migrate applies the migrations once, then says the database is up to date', async (t) => {
    const databaseUrl = tempDatabaseUrl(t);
    const first = await billing(['migrate'], { DATABASE_URL: databaseUrl });
    assert.equal(first.code, 0, first.stderr);
    assert.match(first.stdout, /^applied \S+/);
    const second = await billing(['migrate'], { DATABASE_URL: databaseUrl });
    assert.equal(second.code, 0, second.stderr);
    assert.equal(second.stdout, 'database is up to date\n');
  });
});

describe('billing help and --version', { concurrency: true }, () => {
  test('--version prints the package version alone, without configuration or database', async (t) => {
    const databaseUrl = tempDatabaseUrl(t);
    for (const flag of ['--version', '-v', 'version']) {
      // A bad PORT would stop any command that reads the configuration.
      const result = await billingProcess([flag], { DATABASE_URL: databaseUrl, PORT: 'abc' });
      assert.equal(result.code, 0, result.stderr);
      assert.equal(result.stdout, `${VERSION}\n`);
      assert.equal(result.stderr, '');
    }
    assert.match(VERSION, /^\d+\.\d+\.\d+/);
    assert.ok(!existsSync(databaseUrl.slice('sqlite:'.length)), 'no database was opened');
  });

  test('help, --help and -h print every command on stdout and exit 0', async () => {
    for (const args of [['help'], ['--help'], ['-h']]) {
      const result = await billing(args, { PORT: 'abc' });
      assert.equal(result.code, 0, result.stderr);
      assert.match(result.stdout, /^usage: billing <command>/);
      for (const entry of Object.values(COMMAND_HELP)) assert.ok(result.stdout.includes(entry.usage), entry.usage);
      assert.equal(result.stderr, '');
    }
  });

  test('keys --help (a real process) prints the keys actions, not "unknown keys action"', async (t) => {
    const databaseUrl = tempDatabaseUrl(t);
    const result = await billingProcess(['keys', '--help'], { DATABASE_URL: databaseUrl });
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stderr, '');
    assert.match(result.stdout, /^usage: billing keys <action>/);
    for (const entry of Object.values(KEYS_HELP)) assert.ok(result.stdout.includes(entry.usage), entry.usage);
    assert.ok(!existsSync(databaseUrl.slice('sqlite:'.length)), 'no database was opened');
  });

  test('every command and keys action has --help, -h and `help …`: its own usage on stdout, exit 0', async (t) => {
    const databaseUrl = tempDatabaseUrl(t);
    const topics: [string[], string][] = [
      ...Object.entries(COMMAND_HELP).map(([name, entry]): [string[], string] => [[name], entry.usage]),
      ...Object.entries(KEYS_HELP).map(([name, entry]): [string[], string] => [['keys', name], entry.usage]),
    ];
    for (const [words, usage] of topics) {
      for (const args of [
        [...words, '--help'],
        [...words, '-h'],
        ['help', ...words],
      ]) {
        const result = await billing(args, { DATABASE_URL: databaseUrl });
        assert.equal(result.code, 0, `${args.join(' ')}: ${result.stderr}`);
        assert.ok(result.stdout.startsWith(`usage: billing ${usage}`), `${args.join(' ')}: ${result.stdout}`);
        assert.equal(result.stderr, '');
      }
    }
    // --help wins over everything else on the line, even a missing required option.
    const create = await billing(['keys', 'create', '--scope', 'root', '--help'], { DATABASE_URL: databaseUrl });
    assert.equal(create.code, 0);
    assert.match(create.stdout, /--expires-at ISO/);
    assert.ok(!existsSync(databaseUrl.slice('sqlite:'.length)), 'help never opens the database');
  });

  test('help for an unknown command, and unknown options, are usage errors (64) on stderr', async (t) => {
    const databaseUrl = tempDatabaseUrl(t);
    const cases = [
      ['help', 'frob'],
      ['frob', '--help'],
      ['keys', 'frob', '--help'],
      ['keys'],
      ['migrate', '--bogus'],
      ['demo', 'extra'],
      ['serve', '--no-wroker'],
    ];
    for (const args of cases) {
      const result = await billing(args, { DATABASE_URL: databaseUrl });
      assert.equal(result.code, 64, args.join(' '));
      assert.equal(result.stdout, '');
      assert.match(result.stderr, /usage: billing/);
    }
    const serve = await billing(['serve', '--no-wroker'], { DATABASE_URL: databaseUrl });
    assert.match(serve.stderr, /usage: billing serve \[--no-worker\]/, 'the usage of the command at fault');
    assert.ok(!existsSync(databaseUrl.slice('sqlite:'.length)), 'no database was created or migrated');
  });
});

/** Starts a long-running `billing` command, waits for `ready` in its output, sends SIGTERM. */
function runUntilReady(
  args: string[],
  env: Record<string, string>,
  ready: RegExp,
): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, ...env } });
    let out = '';
    let signalled = false;
    const onData = (chunk: Buffer) => {
      out += chunk.toString();
      if (!signalled && ready.test(out)) {
        signalled = true;
        child.kill('SIGTERM');
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('close', (code) => resolve({ code, out }));
  });
}

// Each test owns its temp database and processes, so they run concurrently.
describe('billing worker and serve', { concurrency: true }, () => {
  // One `billing worker` serves the two worker tests (a start-up costs ≈ 1.2 s of CPU): on a
  // database holding a saved method whose secret opens with no configured key, it runs until
  // it has said both that it started and what it could not open, then gets SIGTERM.
  let worker: Promise<{ code: number | null; out: string; key: string }> | undefined;
  const runWorker = (t: TestContext) =>
    (worker ??= (async () => {
      const databaseUrl = tempDatabaseUrl(t);
      await saveMethodUnder(databaseUrl, randomBytes(32).toString('base64'), 'AUTH_startup');
      const key = randomBytes(32).toString('base64');
      const result = await runUntilReady(
        ['worker'],
        { DATABASE_URL: databaseUrl, LOG_LEVEL: 'info', DATA_ENCRYPTION_KEY: key },
        /worker started[\s\S]*open with no key of DATA_ENCRYPTION_KEYS|open with no key of DATA_ENCRYPTION_KEYS[\s\S]*worker started/,
      );
      return { ...result, key };
    })());

  test('serve and worker refuse to start when DEFAULT_TAX_RATE_IDS names no tax rate, naming the id', async (t) => {
    const databaseUrl = tempDatabaseUrl(t);
    const missing = 'txr_01JZZZZZZZZZZZZZZZZZZZZZZZ';
    for (const args of [['serve', '--no-worker'], ['worker']]) {
      const result = await billing(args, { DATABASE_URL: databaseUrl, DEFAULT_TAX_RATE_IDS: missing });
      assert.equal(result.code, 1, result.stderr);
      assert.match(result.stderr, new RegExp(`^billing: DEFAULT_TAX_RATE_IDS names ${missing}: no such tax rate`));
    }
  });

  test('worker runs the background jobs alone and exits 0 on SIGTERM', async (t) => {
    const result = await runWorker(t);
    assert.equal(result.code, 0, result.out);
    assert.match(result.out, /expire_incomplete_subscriptions/);
  });

  test(
    'worker start-up warns, with counts, when stored secrets open with no configured key',
    { timeout: 60_000 },
    async (t) => {
      const { key, ...result } = await runWorker(t);
      assert.equal(result.code, 0, result.out);
      const line = result.out.split('\n').find((l) => l.includes('open with no key'));
      const logged = JSON.parse(line!);
      assert.equal(logged.level, 40, 'warn');
      assert.deepEqual([logged.stored_secrets, logged.unreadable, logged.by_key], [1, 1, [0]]);
      assert.ok(!result.out.includes('AUTH_startup') && !result.out.includes(key), 'no secret, no key');
    },
  );

  test('serve --no-worker says where it serves, where the data is and how to make a key; exits 0 on SIGTERM', async (t) => {
    const databaseUrl = tempDatabaseUrl(t);
    const result = await runUntilReady(
      ['serve', '--no-worker'],
      { DATABASE_URL: databaseUrl, LOG_LEVEL: 'info', PORT: '0' },
      /no API key exists yet/,
    );
    assert.equal(result.code, 0, result.out);
    const ready = JSON.parse(result.out.split('\n').find((line) => line.includes('"ready: '))!);
    assert.match(ready.url, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.equal(ready.console, `${ready.url}/console (sign in: npx billing console-login)`);
    assert.equal(ready.database, `SQLite ${databaseUrl.slice('sqlite:'.length)}`);
    assert.match(result.out, /npx billing keys create --name admin/);
    assert.match(result.out, /shutting down/);
  });
});
