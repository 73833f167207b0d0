// `billing <command>` (SPEC §1): serve, migrate, keys create|list|revoke.
import { parseArgs } from 'node:util';
import { type Config, ConfigError, loadConfig } from './config.ts';
import { openDatabase } from './db/connect.ts';
import { migrateToLatest } from './db/migrate.ts';
import { createDeps } from './deps.ts';
import { parseListParams } from './http/lists.ts';
import * as apiKeys from './modules/api-keys/api-keys.service.ts';

const EXIT_USAGE = 64;
const EXIT_CONFIG = 78;

const USAGE = `usage: billing <command>

  serve [--no-worker]                           start the HTTP API (and the worker)
  worker                                        run only the background worker
  migrate                                       apply pending database migrations
  keys create --name N [--scope read|write|admin] [--expires-at ISO]
                                                create an API key; prints the key once
  keys list                                     list API keys (prefix and last 4 only)
  keys revoke ID                                revoke an API key

Configuration comes from environment variables; see the README.`;

class UsageError extends Error {}

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
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
}

/** `keys …` arguments, checked before the database is opened: a usage error never touches it. */
type KeysAction =
  | { action: 'create'; name: string; scope: apiKeys.KeyScope; expiresAt: string | undefined }
  | { action: 'list' }
  | { action: 'revoke'; id: string };

function parseKeysCommand(args: string[]): KeysAction {
  const [action, ...rest] = args;
  const { values, positionals } = parseKeysArgs(rest);
  if (action === 'create') {
    if (!values.name) throw new UsageError('keys create needs --name');
    const scope = values.scope ?? 'write';
    if (scope !== 'read' && scope !== 'write' && scope !== 'admin') {
      throw new UsageError('--scope must be read, write or admin');
    }
    return { action, name: values.name, scope, expiresAt: values['expires-at'] };
  }
  if (action === 'list') return { action };
  if (action === 'revoke') {
    const id = positionals[0];
    if (!id) throw new UsageError('keys revoke needs an id');
    return { action, id };
  }
  throw new UsageError(`unknown keys action "${action ?? ''}"`);
}

async function keysCommand(config: Readonly<Config>, args: string[], io: CliIo): Promise<void> {
  const command = parseKeysCommand(args);
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
 * Runs one CLI command with `argv` (without node and script). Resolves with the exit code,
 * or -1 for `serve` and `worker`, which keep running (they log to the process's stdout and
 * stop on its signals). `io` defaults to the process's environment and streams; tests run
 * commands in-process with their own.
 */
export async function runCli(argv: string[], io: CliIo = PROCESS_IO): Promise<number> {
  const [command, ...args] = argv;
  let config: Readonly<Config>;
  try {
    config = loadConfig(io.env);
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
        // Loaded only here: the HTTP stack roughly doubles the start-up time of `keys` and `migrate`.
        const { serve } = await import('./server.ts');
        await serve(config, { worker: !args.includes('--no-worker') });
        return -1; // keeps running
      }
      case 'worker': {
        const { runWorker } = await import('./server.ts');
        await runWorker(config);
        return -1; // keeps running
      }
      case 'migrate': {
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
      case 'help':
      case '--help':
      case '-h':
        io.stdout.write(`${USAGE}\n`);
        return 0;
      default:
        throw new UsageError(`unknown command "${command}"`);
    }
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr.write(`${error.message}\n\n${USAGE}\n`);
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
