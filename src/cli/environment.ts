// Where a command's configuration comes from besides the process environment: a `.env` file
// in the working directory (the environment wins), and — on the default SQLite set-up only —
// a DATA_ENCRYPTION_KEY generated once and kept beside the database, as self-hosted tools do.
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { parseEnv } from 'node:util';
import { type Config, ConfigError, loadConfig } from '../config.ts';

type Env = Readonly<Record<string, string | undefined>>;

/** The name of the generated key's file, in the SQLite database's directory. */
export const DATA_KEY_FILE = 'data-encryption.key';

/**
 * `env` with the variables of `<cwd>/.env` it does not set itself (the environment wins, as
 * with Node's `--env-file`). A missing file adds nothing; the file's syntax is Node's
 * (`util.parseEnv`: `NAME=value`, `#` comments, quoted values).
 */
export function withEnvFile(env: Env, cwd: string): Env {
  const path = join(cwd, '.env');
  if (!existsSync(path)) return env;
  return { ...parseEnv(readFileSync(path, 'utf8')), ...env };
}

/**
 * The file a generated key is kept in, or null when none is needed (a key is set, or no
 * provider has a key: nothing would be saved encrypted) or the set-up is not a SQLite file.
 */
function dataKeyPath(env: Env): string | null {
  if (env.DATA_ENCRYPTION_KEY || env.DATA_ENCRYPTION_KEYS) return null;
  if (!env.PAYSTACK_SECRET_KEY && !env.STRIPE_API_KEY) return null;
  const url = env.DATABASE_URL || 'sqlite:./data/billing.db';
  if (!url.startsWith('sqlite:')) return null; // PostgreSQL: the key stays required
  const path = url.slice('sqlite:'.length);
  if (path === '' || path === ':memory:') return null;
  return join(dirname(resolve(path)), DATA_KEY_FILE);
}

/**
 * The configuration of a command that serves or collects money (serve, worker, demo): as
 * `loadConfig(env)`, but on a SQLite file with a provider key (PAYSTACK_SECRET_KEY or
 * STRIPE_API_KEY: the case loadConfig requires a data key for) and neither
 * DATA_ENCRYPTION_KEY nor DATA_ENCRYPTION_KEYS set, the key is read from `data-encryption.key` beside the database
 * — created once (32 random bytes, base64, mode 0600; `say` tells the operator, loudly) when
 * the rest of the configuration is valid, so a config error writes nothing. Two processes
 * starting at once keep the first file written. Throws ConfigError as loadConfig does.
 */
export function loadConfigWithDataKey(env: Env, say: (line: string) => void): Readonly<Config> {
  const path = dataKeyPath(env);
  if (path === null) return loadConfig(env);
  if (existsSync(path)) return loadConfig({ ...env, DATA_ENCRYPTION_KEY: readKey(path) });
  const key = randomBytes(32).toString('base64');
  const config = loadConfig({ ...env, DATA_ENCRYPTION_KEY: key });
  mkdirSync(dirname(path), { recursive: true });
  try {
    writeFileSync(path, `${key}\n`, { flag: 'wx', mode: 0o600 });
  } catch (error) {
    // Another process wrote it first: use that one.
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') {
      return loadConfig({ ...env, DATA_ENCRYPTION_KEY: readKey(path) });
    }
    throw error;
  }
  chmodSync(path, 0o600); // the umask may have narrowed it further, never widened: state it
  say(
    `GENERATED DATA_ENCRYPTION_KEY in ${path} (mode 0600): saved payment methods are encrypted with it. ` +
      'Back it up with the database; without it they cannot be charged. ' +
      'Set DATA_ENCRYPTION_KEY yourself to use your own key instead.',
  );
  return config;
}

function readKey(path: string): string {
  const key = readFileSync(path, 'utf8').trim();
  if ((statSync(path).mode & 0o077) !== 0) {
    throw new ConfigError('DATA_ENCRYPTION_KEY', `file ${path} must be readable by its owner only (chmod 600 it)`);
  }
  if (key === '') throw new ConfigError('DATA_ENCRYPTION_KEY', `file ${path} is empty`);
  return key;
}
