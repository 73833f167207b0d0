// A production install starts on the machine's own Node, whatever its version: the tracked
// files copied to a temp dir, `npm ci --omit=dev`, then `npm start`, with the system's `node`
// first on the PATH (this suite runs on the Node 24 the project brings; the install must not
// need it). It downloads nothing new when npm's cache is warm, but still costs ≈ 30 s, so it
// runs when PRODUCTION_INSTALL_TEST=1 (.ci/run sets it for its SQLite pass).
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { freePort } from './helpers/service.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const RUN = process.env.PRODUCTION_INSTALL_TEST === '1';

/** PATH without the project's node_modules/.bin entries (npm scripts put them first). */
function systemPath(): string {
  return (process.env.PATH ?? '')
    .split(delimiter)
    .filter((entry) => !entry.includes('node_modules'))
    .join(delimiter);
}

test(
  'npm ci --omit=dev && npm start serves on the system Node',
  { skip: !RUN && 'PRODUCTION_INSTALL_TEST=1 runs it' },
  async (t) => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
    assert.ok(pkg.engines?.node, 'package.json states the Node versions it installs on');
    assert.ok(pkg.dependencies.node, 'the runtime is a production dependency');

    const dir = mkdtempSync(join(tmpdir(), 'billing-production-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const tracked = execFileSync('git', ['ls-files', '-z'], { cwd: ROOT, encoding: 'utf8' })
      .split('\0')
      .filter(Boolean);
    for (const file of tracked) {
      mkdirSync(join(dir, dirname(file)), { recursive: true });
      cpSync(join(ROOT, file), join(dir, file));
    }
    const env: NodeJS.ProcessEnv = { ...process.env, PATH: systemPath() };
    delete env.NODE_COMPILE_CACHE;
    delete env.TEST_DATABASE_URL;
    execFileSync('npm', ['ci', '--omit=dev', '--prefer-offline', '--no-audit', '--no-fund'], {
      cwd: dir,
      env,
      stdio: 'ignore',
    });

    const port = await freePort();
    const child = spawn('npm', ['start'], {
      cwd: dir,
      env: { ...env, PORT: String(port), LOG_LEVEL: 'info' },
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk));
    const exited = new Promise((resolve) => child.on('close', resolve));
    t.after(async () => {
      try {
        process.kill(-child.pid!, 'SIGTERM');
      } catch {
        // already gone
      }
      await exited;
    });
    let status = 0;
    for (let i = 0; i < 120 && status !== 200; i++) {
      status = await fetch(`http://127.0.0.1:${port}/api/health`).then(
        (res) => res.status,
        () => 0,
      );
      if (status !== 200) await sleep(500);
    }
    assert.equal(status, 200, `health answered; the server said:\n${output}`);
  },
);
