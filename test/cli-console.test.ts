// `billing console-login` and `billing console-logout` (SPEC §16) as a user runs them, on a
// SQLite file: the link on stdout under PUBLIC_URL, single use; --read-only; logout --all.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { runCli } from '../src/cli.ts';
import { loadConfig } from '../src/config.ts';
import { createDeps } from '../src/deps.ts';
import { findLiveSession, redeemLoginLink } from '../src/modules/console-sessions/console-sessions.service.ts';

function tempDatabaseUrl(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'billing-console-cli-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return `sqlite:${join(dir, 'billing.db')}`;
}

async function billing(args: string[], env: Record<string, string>) {
  let stdout = '';
  let stderr = '';
  const code = await runCli(args, {
    env: { LOG_LEVEL: 'silent', ...env },
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
  });
  return { code, stdout, stderr };
}

test('console-login prints one link under PUBLIC_URL that starts one session; --read-only; console-logout --all ends it', async (t) => {
  const env = { DATABASE_URL: tempDatabaseUrl(t), PUBLIC_URL: 'https://billing.example.com/' };
  assert.equal((await billing(['migrate'], env)).code, 0);
  const login = await billing(['console-login'], env);
  assert.equal(login.code, 0, login.stderr);
  const match = /^https:\/\/billing\.example\.com\/console\/login\/([A-Za-z0-9_-]{43})\n$/.exec(login.stdout);
  assert.ok(match, `one line, the link: ${login.stdout}`);
  assert.match(login.stderr, /one use until \d{4}-\d\d-\d\dT/);
  assert.ok(!login.stderr.includes(match[1]!), 'the token is printed once, on stdout');
  const readOnly = await billing(['console-login', '--read-only'], env);
  const readOnlyToken = /login\/(\S+)\n$/.exec(readOnly.stdout)![1]!;

  const deps = await createDeps(loadConfig({ ...env, LOG_LEVEL: 'silent' }), { migrate: false });
  t.after(() => deps.close());
  const session = await redeemLoginLink(deps.db, deps.clock, match[1]!);
  assert.equal(session?.session.readOnly, false);
  assert.equal(await redeemLoginLink(deps.db, deps.clock, match[1]!), undefined, 'single use');
  assert.equal((await redeemLoginLink(deps.db, deps.clock, readOnlyToken))?.session.readOnly, true);

  const logout = await billing(['console-logout', '--all'], env);
  assert.equal(logout.code, 0, logout.stderr);
  assert.match(logout.stdout, /ended 2 console session/);
  assert.equal(await findLiveSession(deps.db, deps.clock, session!.token, 60_000), undefined);
});

test('console-logout without --all and unknown options are usage errors (64) that touch no database', async (t) => {
  const env = { DATABASE_URL: tempDatabaseUrl(t) };
  for (const args of [['console-logout'], ['console-login', '--admin'], ['console-login', 'extra']]) {
    const result = await billing(args, env);
    assert.equal(result.code, 64, args.join(' '));
    assert.match(result.stderr, /usage: billing console-/);
  }
  assert.ok(!existsSync(env.DATABASE_URL.slice('sqlite:'.length)), 'no database was opened');
});
