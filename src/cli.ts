// `billing <command>` (SPEC §1): serve, migrate, keys create|list|revoke.
import { parseArgs } from 'node:util';
import { ConfigError, type Config, loadConfig } from './config.ts';
import { createDeps } from './deps.ts';
import { openDatabase } from './db/connect.ts';
import { migrateToLatest } from './db/migrate.ts';
import { parseListParams } from './http/lists.ts';
import * as apiKeys from './modules/api-keys/api-keys.service.ts';
import { serve } from './server.ts';

const EXIT_USAGE = 64;
const EXIT_CONFIG = 78;

const USAGE = `usage: billing <command>

  serve [--no-worker]                           start the HTTP API (and the worker)
  migrate                                       apply pending database migrations
  keys create --name N [--scope read|write|admin] [--expires-at ISO]
                                                create an API key; prints the key once
  keys list                                     list API keys (prefix and last 4 only)
  keys revoke ID                                revoke an API key

Configuration comes from environment variables; see the README.`;

class UsageError extends Error {}

async function keysCommand(config: Readonly<Config>, args: string[]): Promise<void> {
  const [action, ...rest] = args;
  const { values, positionals } = parseArgs({
    args: rest,
    allowPositionals: true,
    options: { name: { type: 'string' }, scope: { type: 'string' }, 'expires-at': { type: 'string' } },
  });
  const deps = await createDeps(config);
  try {
    if (action === 'create') {
      if (!values.name) throw new UsageError('keys create needs --name');
      const scope = values.scope ?? 'write';
      if (scope !== 'read' && scope !== 'write' && scope !== 'admin') throw new UsageError('--scope must be read, write or admin');
      const created = await apiKeys.createApiKey(deps.db, deps.clock, {
        name: values.name,
        scope,
        expiresAt: values['expires-at'],
      });
      process.stderr.write(`created ${created.id} (${created.scope}); the key is shown only now:\n`);
      process.stdout.write(`${created.key}\n`);
    } else if (action === 'list') {
      let page = 0;
      for (;;) {
        const result = await apiKeys.listApiKeys(deps.db, parseListParams({ page: String(page), limit: '100' }));
        for (const key of result.data) {
          const state = key.revoked_at ? 'revoked' : key.expires_at && key.expires_at <= new Date().toISOString() ? 'expired' : 'active';
          process.stdout.write(
            `${key.id}\t${key.prefix}…${key.last4}\t${key.scope}\t${state}\t${key.name}\tlast used ${key.last_used_at ?? 'never'}\n`,
          );
        }
        if ((page + 1) * 100 >= result.meta.total) break;
        page += 1;
      }
    } else if (action === 'revoke') {
      const id = positionals[0];
      if (!id) throw new UsageError('keys revoke needs an id');
      const revoked = await apiKeys.revokeApiKey(deps.db, deps.clock, id);
      process.stdout.write(`revoked ${revoked.id}\n`);
    } else {
      throw new UsageError(`unknown keys action "${action ?? ''}"`);
    }
  } finally {
    await deps.close();
  }
}

/** Runs one CLI command with `argv` (without node and script). Resolves with the exit code. */
export async function runCli(argv: string[]): Promise<number> {
  const [command, ...args] = argv;
  let config: Readonly<Config>;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`config error: ${error.message}\n`);
      return EXIT_CONFIG;
    }
    throw error;
  }
  try {
    switch (command) {
      case 'serve':
      case undefined:
        await serve(config, { worker: !args.includes('--no-worker') });
        return -1; // keeps running
      case 'migrate': {
        const handle = openDatabase(config.database);
        try {
          const applied = await migrateToLatest(handle);
          process.stdout.write(applied.length ? `applied ${applied.join(', ')}\n` : 'database is up to date\n');
        } finally {
          await handle.close();
        }
        return 0;
      }
      case 'keys':
        await keysCommand(config, args);
        return 0;
      case 'help':
      case '--help':
      case '-h':
        process.stdout.write(`${USAGE}\n`);
        return 0;
      default:
        throw new UsageError(`unknown command "${command}"`);
    }
  } catch (error) {
    if (error instanceof UsageError) {
      process.stderr.write(`${error.message}\n\n${USAGE}\n`);
      return EXIT_USAGE;
    }
    if (error instanceof Error && 'code' in error && error.code === 'not_found') {
      process.stderr.write(`${error.message}\n`);
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
