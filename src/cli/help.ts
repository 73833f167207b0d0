// The `billing` command's help texts: one entry per command and `keys`
// action, so `billing help X`, `billing X --help` and the usage printed after a usage error
// all come from the same words.

interface HelpEntry {
  /** The synopsis after `billing `. */
  usage: string;
  /** One line for the command list. */
  summary: string;
  /** What `--help` adds: options and notes, already indented text. */
  details?: string;
}

export const COMMAND_HELP: Readonly<Record<string, HelpEntry>> = {
  serve: {
    usage: 'serve [--no-worker]',
    summary: 'start the HTTP API and the background worker (what `npm start` runs)',
    details: `Runs pending migrations, then serves on HOST:PORT until SIGTERM/SIGINT (graceful drain).

options:
  --no-worker   serve the API only; run the worker elsewhere with \`billing worker\``,
  },
  worker: {
    usage: 'worker',
    summary: 'run only the background worker (jobs and webhook delivery)',
    details: 'Runs until SIGTERM/SIGINT; any number of workers can share one PostgreSQL database.',
  },
  migrate: {
    usage: 'migrate',
    summary: 'apply pending database migrations',
    details: 'Prints the migrations applied, or "database is up to date". `serve` also migrates at start.',
  },
  keys: {
    usage: 'keys <action>',
    summary: 'manage API keys: create, list, revoke (see `billing keys --help`)',
  },
  'rotate-data-key': {
    usage: 'rotate-data-key',
    summary: 're-encrypt stored secrets with the first DATA_ENCRYPTION_KEYS key',
    details: `Re-encrypts every saved payment method's credential that an older key of
DATA_ENCRYPTION_KEYS (newest first) opens, with the first key, in batches; safe while the
service runs and safe to run again. Prints how many were re-encrypted, already current, and
unreadable (no configured key opens them: left as they are). Exit 0 when none is
unreadable, 1 otherwise. Steps: docs/operations.md "Rotating DATA_ENCRYPTION_KEY".`,
  },
  demo: {
    usage: 'demo',
    summary: 'add a small story beside your data: customers, plans, subscriptions, payments',
    details: `Works on the database of DATABASE_URL, in this process (no running server needed;
a running \`npm start\` on the same database shows the result at once). It creates plans,
customers and subscriptions through the API's routes, then sends Paystack and Stripe events
signed with PAYSTACK_SECRET_KEY and STRIPE_WEBHOOK_SECRET through POST /api/notify: payments,
a refund, a saved card, and a declined renewal whose open invoice a dunning case chases. Its
customers' emails are under @demo.example, so it runs beside your own data; it prints the ids
to look at next.

Needs both provider secrets set (the same values the server uses). Refuses (exit 1, nothing
changed) a database that has the demo's data already, or has received provider events the
demo did not send (it may be live: the demo posts fake signed payments).`,
  },
  'console-login': {
    usage: 'console-login [--read-only]',
    summary: 'print a one-time sign-in link to the operator console (/console)',
    details: `Prints <PUBLIC_URL>/console/login/<token> on stdout: open it in a browser within 15
minutes; it works once and starts a console session (a cookie; no API key reaches the
browser). The session ends after CONSOLE_IDLE_TIMEOUT (default 30m) without a request, on
Sign out, or with \`billing console-logout --all\`. See docs/console.md.

options:
  --read-only   the session can look at everything and change nothing`,
  },
  'console-logout': {
    usage: 'console-logout --all',
    summary: 'end every operator console session and unused sign-in link',
  },
  help: {
    usage: 'help [command [action]]',
    summary: 'show this help, or the help of a command',
  },
  version: {
    usage: '--version',
    summary: 'print the version',
  },
};

export const KEYS_HELP: Readonly<Record<string, HelpEntry>> = {
  create: {
    usage: 'keys create --name N [--scope read|write|admin] [--expires-at ISO]',
    summary: 'create an API key; prints the key once on stdout (its id on stderr)',
    details: `options:
  --name N          a label for people (required)
  --scope S         read (GET only), write (read + changes; the default) or admin (write + API keys)
  --expires-at ISO  an ISO 8601 date-time after which the key stops working`,
  },
  list: {
    usage: 'keys list',
    summary: 'list API keys: id, prefix…last 4, scope, state, name, last use (never the key)',
  },
  revoke: {
    usage: 'keys revoke ID',
    summary: 'revoke an API key at once',
  },
};

function commandList(entries: Readonly<Record<string, HelpEntry>>): string {
  const rows = Object.values(entries).map((entry) => [entry.usage, entry.summary] as const);
  const width = 28;
  return rows
    .map(([usage, summary]) =>
      usage.length < width - 2
        ? `  ${usage.padEnd(width - 2)}${summary}`
        : `  ${usage}\n  ${' '.repeat(width - 2)}${summary}`,
    )
    .join('\n');
}

const CONFIG_NOTE = `Configuration comes from environment variables (see .env.example and docs/configuration.md).`;

/** The top-level help: every command, one line each. */
export const USAGE = `usage: billing <command> [options]

commands:
${commandList(COMMAND_HELP)}

Run \`billing <command> --help\` for a command's options.\n${CONFIG_NOTE}`;

const KEYS_USAGE = `usage: billing keys <action> [options]

actions:
${commandList(KEYS_HELP)}

Run \`billing keys <action> --help\` for an action's options.\n${CONFIG_NOTE}`;

function entryHelp(entry: HelpEntry): string {
  return `usage: billing ${entry.usage}\n\n${entry.summary}.${entry.details ? `\n\n${entry.details}` : ''}`;
}

/**
 * The help of `command` (and, for `keys`, its `action`); the top-level usage when no command
 * is given. Undefined when the command or action is unknown.
 */
export function helpText(command?: string, action?: string): string | undefined {
  if (command === undefined) return USAGE;
  if (command === 'keys') {
    if (action === undefined) return KEYS_USAGE;
    const entry = Object.hasOwn(KEYS_HELP, action) ? KEYS_HELP[action] : undefined;
    return entry && entryHelp(entry);
  }
  const entry = Object.hasOwn(COMMAND_HELP, command) ? COMMAND_HELP[command] : undefined;
  return entry && entryHelp(entry);
}
