// `billing <command>` (SPEC §1): serve, worker, migrate, keys create|list|revoke,
// rotate-data-key, demo, console-login, console-logout, and help/--version. Help texts live in cli/help.ts; the demo in cli/demo.ts.
//
// Only what every command needs is imported up front (the help texts, the version, the
// configuration); a command imports the rest itself. The database, the app and the provider
// clients cost ≈ 0.5 s of CPU to load, which `--version`, help, usage and configuration
// errors then never pay (≈ 0.05 s instead).
import { parseArgs } from 'node:util';
import { loadConfigWithDataKey, withEnvFile } from './cli/environment.ts';
import { helpText, USAGE } from './cli/help.ts';
import { type Config, ConfigError, loadConfig } from './config.ts';
import type { KeyScope } from './db/tables/api-keys.table.ts';
import { VERSION } from './shared/version.ts';

const EXIT_USAGE = 64;
const EXIT_CONFIG = 78;
const COMMANDS_WITH_DATA_KEY = new Set<string | undefined>([
  undefined,
  'serve',
  'worker',
  'demo',
  'console-login',
  'console-logout',
]);

/** A command line the CLI cannot run: the message, then the usage of `command` (exit 64). */
class UsageError extends Error {
  readonly command: string | undefined;
  constructor(message: string, command?: string) {
    super(message);
    this.command = command;
  }
}

/** Where a command reads its configuration and writes its output (the process's, by default). */
export interface CliIo {
  env: Readonly<Record<string, string | undefined>>;
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown };
}

const PROCESS_IO: CliIo = { env: process.env, stdout: process.stdout, stderr: process.stderr };

/** The options of `keys …`; an unknown option or a missing value is a usage error (exit 64). */
function parseKeysArgs(args: string[]) {
  try {
    return parseArgs({
      args,
      allowPositionals: true,
      options: { name: { type: 'string' }, scope: { type: 'string' }, 'expires-at': { type: 'string' } },
    });
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error), 'keys');
  }
}

/** The options of a command that takes none but `flags` (booleans); anything else is a usage error. */
function checkFlags(command: string, args: string[], flags: string[] = []): Record<string, boolean> {
  try {
    const { values } = parseArgs({
      args,
      allowPositionals: false,
      options: Object.fromEntries(flags.map((flag) => [flag, { type: 'boolean' as const }])),
    });
    return values as Record<string, boolean>;
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error), command);
  }
}

const HELP_FLAGS = new Set(['--help', '-h']);
const VERSION_FLAGS = new Set(['--version', '-v', '-V', 'version']);

/**
 * What to print without configuration or database, if anything: the version, or help —
 * `billing help [command [action]]`, or `--help`/`-h` anywhere after a command (SPEC §1:
 * every command and subcommand has it). Undefined when the command should run.
 */
function informational(argv: string[]): { text: string } | { unknown: string } | undefined {
  const [command, ...args] = argv;
  if (command === undefined) return undefined; // `billing` alone serves, as before
  const wantsHelp = args.some((arg) => HELP_FLAGS.has(arg));
  if (VERSION_FLAGS.has(command) && !wantsHelp) return { text: VERSION };
  let topics: string[];
  if (command === 'help' || HELP_FLAGS.has(command)) {
    topics = args.filter((arg) => !HELP_FLAGS.has(arg));
    if (topics.length === 0 && command === 'help' && wantsHelp) topics = ['help']; // help --help
  } else if (wantsHelp) {
    topics = [VERSION_FLAGS.has(command) ? 'version' : command, ...args.filter((arg) => !arg.startsWith('-'))];
  } else {
    return undefined;
  }
  const [topic, action] = topics;
  const text = helpText(topic, topic === 'keys' ? action : undefined);
  return text === undefined ? { unknown: topics.slice(0, topic === 'keys' ? 2 : 1).join(' ') } : { text };
}

/** `keys …` arguments, checked before the database is opened: a usage error never touches it. */
type KeysAction =
  | { action: 'create'; name: string; scope: KeyScope; expiresAt: string | undefined }
  | { action: 'list' }
  | { action: 'revoke'; id: string };

function parseKeysCommand(args: string[]): KeysAction {
  const [action, ...rest] = args;
  const { values, positionals } = parseKeysArgs(rest);
  if (action === 'create') {
    if (!values.name) throw new UsageError('keys create needs --name', 'keys');
    const scope = values.scope ?? 'write';
    if (scope !== 'read' && scope !== 'write' && scope !== 'admin') {
      throw new UsageError('--scope must be read, write or admin', 'keys');
    }
    return { action, name: values.name, scope, expiresAt: values['expires-at'] };
  }
  if (action === 'list') return { action };
  if (action === 'revoke') {
    const id = positionals[0];
    if (!id) throw new UsageError('keys revoke needs an id', 'keys');
    return { action, id };
  }
  throw new UsageError(action === undefined ? 'keys needs an action' : `unknown keys action "${action}"`, 'keys');
}

async function keysCommand(config: Readonly<Config>, args: string[], io: CliIo): Promise<void> {
  const command = parseKeysCommand(args);
  const [{ createDeps }, { parseListParams }, apiKeys] = await Promise.all([
    import('./deps.ts'),
    import('./http/lists.ts'),
    import('./modules/api-keys/api-keys.service.ts'),
  ]);
  const deps = await createDeps(config);
  try {
    if (command.action === 'create') {
      const created = await apiKeys.createApiKey(deps.db, deps.clock, command);
      io.stderr.write(`created ${created.id} (${created.scope}); the key is shown only now:\n`);
      io.stdout.write(`${created.key}\n`);
    } else if (command.action === 'list') {
      let page = 0;
      for (;;) {
        const result = await apiKeys.listApiKeys(deps.db, parseListParams({ page: String(page), limit: '100' }));
        for (const key of result.data) {
          const state = key.revoked_at
            ? 'revoked'
            : key.expires_at && key.expires_at <= deps.clock.now().toISOString()
              ? 'expired'
              : 'active';
          io.stdout.write(
            `${key.id}\t${key.prefix}…${key.last4}\t${key.scope}\t${state}\t${key.name}\tlast used ${key.last_used_at ?? 'never'}\n`,
          );
        }
        if ((page + 1) * 100 >= result.meta.total) break;
        page += 1;
      }
    } else {
      const revoked = await apiKeys.revokeApiKey(deps.db, deps.clock, command.id);
      io.stdout.write(`revoked ${revoked.id}\n`);
    }
  } finally {
    await deps.close();
  }
}

/**
 * `billing rotate-data-key` (docs/operations.md "Rotating DATA_ENCRYPTION_KEY"): re-encrypts
 * stored secrets with the first key. Returns the exit code: 0, 1 when some secret no key
 * opens, 78 when no key is configured.
 */
async function rotateDataKeyCommand(config: Readonly<Config>, io: CliIo): Promise<number> {
  if (config.dataEncryptionKeys.length === 0) {
    io.stderr.write(
      'config error: DATA_ENCRYPTION_KEYS (or DATA_ENCRYPTION_KEY) is not set: there is no key to rotate to\n',
    );
    return EXIT_CONFIG;
  }
  const [{ createDeps }, { reencryptStoredSecrets }] = await Promise.all([
    import('./deps.ts'),
    import('./modules/payment-methods/payment-methods.keys.ts'),
  ]);
  const deps = await createDeps(config);
  try {
    const result = await reencryptStoredSecrets(deps.db, config.dataEncryptionKeys);
    io.stdout.write(
      `re-encrypted ${result.reencrypted}, already under the first key ${result.current}, unreadable ${result.unreadable}\n`,
    );
    if (result.unreadable === 0) return 0;
    io.stderr.write(
      `${result.unreadable} saved payment method credential(s) open with no key of DATA_ENCRYPTION_KEYS and were left as they are: list the key they were saved with, then run this again\n`,
    );
    return 1;
  } finally {
    await deps.close();
  }
}

/**
 * `billing console-login [--read-only]` (SPEC §16): prints a one-time sign-in link to the
 * operator console (single use, 15 minutes) on stdout, its expiry on stderr.
 */
async function consoleLoginCommand(config: Readonly<Config>, args: string[], io: CliIo): Promise<number> {
  const { 'read-only': readOnly = false } = checkFlags('console-login', args, ['read-only']);
  const [{ createDeps }, consoleSessions] = await Promise.all([
    import('./deps.ts'),
    import('./modules/console-sessions/console-sessions.service.ts'),
  ]);
  const deps = await createDeps(config);
  try {
    const link = await consoleSessions.createLoginLink(deps.db, deps.clock, { readOnly });
    io.stderr.write(
      `${readOnly ? 'read-only ' : ''}sign-in link, for one use until ${link.expires_at}; open it in your browser:\n`,
    );
    io.stdout.write(`${config.publicUrl}${consoleSessions.LOGIN_PATH}${link.token}\n`);
    return 0;
  } finally {
    await deps.close();
  }
}

/** `billing console-logout --all` (SPEC §16): ends every console session and unused sign-in link. */
async function consoleLogoutCommand(config: Readonly<Config>, args: string[], io: CliIo): Promise<number> {
  const { all } = checkFlags('console-logout', args, ['all']);
  if (!all)
    throw new UsageError('console-logout needs --all (sessions end one by one with Sign out)', 'console-logout');
  const [{ createDeps }, consoleSessions] = await Promise.all([
    import('./deps.ts'),
    import('./modules/console-sessions/console-sessions.service.ts'),
  ]);
  const deps = await createDeps(config);
  try {
    const ended = await consoleSessions.revokeAllSessions(deps.db, deps.clock);
    io.stdout.write(`ended ${ended} console session(s); unused sign-in links no longer work\n`);
    return 0;
  } finally {
    await deps.close();
  }
}

/**
 * Runs one CLI command with `argv` (without node and script). Resolves with the exit code,
 * or -1 for `serve` and `worker`, which keep running (they log to the process's stdout and
 * stop on its signals). `--version` and help need no configuration. `io` defaults to the
 * process's environment and streams; tests run commands in-process with their own.
 */
export async function runCli(argv: string[], io: CliIo = PROCESS_IO): Promise<number> {
  const info = informational(argv);
  if (info && 'text' in info) {
    io.stdout.write(`${info.text}\n`);
    return 0;
  }
  if (info) {
    io.stderr.write(`no help for "${info.unknown}": unknown command\n\n${USAGE}\n`);
    return EXIT_USAGE;
  }
  const [command, ...args] = argv;
  // The process's own environment also reads ./.env; a caller's `io` is taken as given.
  const env = io === PROCESS_IO ? withEnvFile(io.env, process.cwd()) : io.env;
  let config: Readonly<Config>;
  try {
    // Commands that may hold saved payment methods get the generated key of a SQLite set-up.
    config = COMMANDS_WITH_DATA_KEY.has(command)
      ? loadConfigWithDataKey(env, (line) => io.stderr.write(`${line}\n`))
      : loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) {
      io.stderr.write(`config error: ${error.message}\n`);
      return EXIT_CONFIG;
    }
    throw error;
  }
  try {
    switch (command) {
      case 'serve':
      case undefined: {
        const { 'no-worker': noWorker } = checkFlags('serve', args, ['no-worker']);
        const { serve } = await import('./server.ts');
        await serve(config, { worker: !noWorker });
        return -1; // keeps running
      }
      case 'worker': {
        checkFlags('worker', args);
        const { runWorker } = await import('./server.ts');
        await runWorker(config);
        return -1; // keeps running
      }
      case 'migrate': {
        checkFlags('migrate', args);
        const [{ openDatabase }, { migrateToLatest }] = await Promise.all([
          import('./db/connect.ts'),
          import('./db/migrate.ts'),
        ]);
        const handle = openDatabase(config.database);
        try {
          const applied = await migrateToLatest(handle);
          io.stdout.write(applied.length ? `applied ${applied.join(', ')}\n` : 'database is up to date\n');
        } finally {
          await handle.close();
        }
        return 0;
      }
      case 'keys':
        await keysCommand(config, args, io);
        return 0;
      case 'rotate-data-key':
        checkFlags('rotate-data-key', args);
        return await rotateDataKeyCommand(config, io);
      case 'demo': {
        checkFlags('demo', args);
        const { runDemo } = await import('./cli/demo.ts');
        return await runDemo(config, io);
      }
      case 'console-login':
        return await consoleLoginCommand(config, args, io);
      case 'console-logout':
        return await consoleLogoutCommand(config, args, io);
      default:
        throw new UsageError(`unknown command "${command}"`);
    }
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr.write(`${error.message}\n\n${helpText(error.command) ?? USAGE}\n`);
      return EXIT_USAGE;
    }
    if (error instanceof Error && 'code' in error && error.code === 'not_found') {
      io.stderr.write(`${error.message}\n`);
      return 1;
    }
    throw error;
  }
}

if (import.meta.main) {
  runCli(process.argv.slice(2)).then(
    (code) => {
      if (code >= 0) process.exitCode = code;
    },
    (error: unknown) => {
      process.stderr.write(`billing: ${error instanceof Error ? error.message : String(error)}\n`);
      process.exitCode = 1;
    },
  );
}
