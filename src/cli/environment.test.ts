// Where configuration comes from besides the environment: `.env` (the environment wins) and
// the DATA_ENCRYPTION_KEY generated once beside a SQLite database. The real-process test
// shows `billing` itself reads `.env` from its working directory.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ConfigError } from '../config.ts';
import { DATA_KEY_FILE, loadConfigWithDataKey, withEnvFile } from './environment.ts';

const BIN = fileURLToPath(new URL('../../bin/billing.js', import.meta.url));
const PAYSTACK = { PAYSTACK_SECRET_KEY: 'sk_test_environment_0123456789' };

function tempDir(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'billing-env-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

test('.env adds what the environment does not set; the environment wins; no file adds nothing', (t) => {
  const dir = tempDir(t);
  assert.deepEqual(withEnvFile({ PORT: '1' }, dir), { PORT: '1' });
  writeFileSync(join(dir, '.env'), '# a comment\nPORT=4000\nHOST="0.0.0.0"\nBUSINESS_NAME=\'Ada & Co\'\n');
  assert.deepEqual(withEnvFile({ PORT: '5000' }, dir), { PORT: '5000', HOST: '0.0.0.0', BUSINESS_NAME: 'Ada & Co' });
});

test('on a SQLite file without a key, one is generated once (0600, said loudly) and read back after', (t) => {
  const dir = tempDir(t);
  const env = { DATABASE_URL: `sqlite:${join(dir, 'sub', 'billing.db')}`, ...PAYSTACK };
  const said: string[] = [];
  const first = loadConfigWithDataKey(env, (line) => said.push(line));
  const path = join(dir, 'sub', DATA_KEY_FILE);
  assert.equal(statSync(path).mode & 0o777, 0o600);
  assert.equal(said.length, 1);
  assert.match(said[0]!, /^GENERATED DATA_ENCRYPTION_KEY in .*data-encryption\.key \(mode 0600\)/);
  assert.ok(!said[0]!.includes(readFileSync(path, 'utf8').trim()), 'the key itself is never printed');
  assert.equal(Buffer.from(readFileSync(path, 'utf8').trim(), 'base64').length, 32);

  const again = loadConfigWithDataKey(env, (line) => said.push(line));
  assert.equal(said.length, 1, 'nothing to say the second time');
  assert.deepEqual(again.dataEncryptionKey, first.dataEncryptionKey, 'the same key after a restart');
});

test('a key that is set wins over the file; PostgreSQL and :memory: never get a generated key', (t) => {
  const dir = tempDir(t);
  const own = randomBytes(32).toString('base64');
  const database = `sqlite:${join(dir, 'billing.db')}`;
  const config = loadConfigWithDataKey({ DATABASE_URL: database, DATA_ENCRYPTION_KEY: own, ...PAYSTACK }, () => {});
  assert.deepEqual(config.dataEncryptionKey, Buffer.from(own, 'base64'));
  assert.equal(existsSync(join(dir, DATA_KEY_FILE)), false);
  for (const url of ['postgres://postgres@127.0.0.1:5432/test', 'sqlite::memory:']) {
    assert.throws(
      () => loadConfigWithDataKey({ DATABASE_URL: url, ...PAYSTACK }, () => {}),
      (error) => error instanceof ConfigError && error.variable === 'DATA_ENCRYPTION_KEY',
    );
  }
});

test('a configuration error or no provider key writes no key; a key file others can read is refused', (t) => {
  const dir = tempDir(t);
  const database = `sqlite:${join(dir, 'billing.db')}`;
  assert.throws(
    () => loadConfigWithDataKey({ DATABASE_URL: database, PORT: 'many', ...PAYSTACK }, () => {}),
    ConfigError,
  );
  assert.equal(existsSync(join(dir, DATA_KEY_FILE)), false);
  loadConfigWithDataKey({ DATABASE_URL: database }, () => assert.fail('no provider key: no data key needed'));
  assert.equal(existsSync(join(dir, DATA_KEY_FILE)), false);

  writeFileSync(join(dir, DATA_KEY_FILE), `${randomBytes(32).toString('base64')}\n`);
  chmodSync(join(dir, DATA_KEY_FILE), 0o644);
  assert.throws(
    () => loadConfigWithDataKey({ DATABASE_URL: database, ...PAYSTACK }, () => {}),
    (error) => error instanceof ConfigError && /readable by its owner only/.test(error.message),
  );
});

test('billing (a real process) reads .env from its working directory', async (t) => {
  const dir = tempDir(t);
  writeFileSync(join(dir, '.env'), 'DATABASE_URL=sqlite:./from-dotenv.db\nLOG_LEVEL=silent\n');
  const cache = process.env.NODE_COMPILE_CACHE;
  const code = await new Promise<number | null>((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, 'migrate'], {
      cwd: dir,
      env: { PATH: process.env.PATH ?? '', ...(cache ? { NODE_COMPILE_CACHE: cache } : {}) },
      stdio: 'ignore',
    });
    child.on('error', reject);
    child.on('close', resolve);
  });
  assert.equal(code, 0);
  assert.ok(existsSync(join(dir, 'from-dotenv.db')), 'the database .env names was migrated');
});
