// The README's tour, run as written: its ```sh blocks in order, then the plan-change
// walkthrough it links to (docs/api.md "Plan changes and proration"), in one bash, against a real
// server started as `npm start` starts it (node src/main.ts, a new SQLite database through
// DATABASE_URL, a free port substituted for the README's 3000, the README's own `export`s
// in its environment). `npx billing …` runs the package's bin as a real process. Skipped
// lines: only those that install or start (the test started the one server) and `npm test`.
// The README's quick start is SQLite's, so both passes run it on SQLite.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { freePort } from './helpers/service.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const MAIN = join(ROOT, 'src', 'main.ts');
const BIN = join(ROOT, 'bin', 'billing.js');

/** The README's ```sh blocks, in order. */
function shellBlocks(markdown: string): string[] {
  return [...markdown.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((match) => match[1]!);
}

/** The ```sh blocks of `markdown`'s section `heading` (up to the next `## ` heading), in order. */
function sectionBlocks(markdown: string, heading: string): string[] {
  const start = markdown.indexOf(`\n${heading}\n`);
  assert.ok(start >= 0, `no section ${heading}`);
  const end = markdown.indexOf('\n## ', start + heading.length + 2);
  return shellBlocks(markdown.slice(start, end === -1 ? undefined : end));
}

/** Lines a reader runs elsewhere: installing, starting the server, the test suite. */
const SKIPPED = /^\s*(npm install|npm ci|npm start)\b|\bnpm test\b/;

function run(child: ChildProcess): Promise<{ code: number | null; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

// Every command must exit 0 (set -e, pipefail) and every curl answer be 2xx: `curl -s` would
// hide an HTTP error, so the wrapper reads the status and logs each call for the count below.
const PRELUDE = String.raw`set -euo pipefail
trap 'echo "README command failed: $BASH_COMMAND" >&2' ERR
npx() {
  if [ "$1" != billing ]; then echo "unexpected: npx $*" >&2; return 1; fi
  shift
  "$TOUR_NODE" "$TOUR_BIN" "$@"
}
curl() {
  local status
  status=$(command curl -sS -o "$TOUR_BODY" -w '%{http_code}' "$@")
  cat "$TOUR_BODY"
  echo
  echo "$status $*" >>"$TOUR_LOG"
  case $status in 2??) ;; *) echo "curl $* answered HTTP $status: $(cat "$TOUR_BODY")" >&2; return 1 ;; esac
}
`;

test("the README's tour and the plan-change walkthrough it links run as written: every command exits 0, every API answer is 2xx", async (t) => {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const api = readFileSync(join(ROOT, 'docs', 'api.md'), 'utf8');
  assert.ok(readme.includes('(docs/api.md#plan-changes-and-proration)'), 'the README links the walkthrough');
  const dir = mkdtempSync(join(tmpdir(), 'billing-readme-tour-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const port = await freePort();
  const script = [...shellBlocks(readme), ...sectionBlocks(api, '## Plan changes and proration')]
    .join('\n')
    .split('\n')
    .filter((line) => !SKIPPED.test(line))
    .join('\n')
    .replaceAll('http://127.0.0.1:3000', `http://127.0.0.1:${port}`);
  const exports = Object.fromEntries(
    [...script.matchAll(/^export ([A-Z_]+)=(\S+)/gm)].map((match) => [match[1]!, match[2]!]),
  );
  assert.ok('PAYSTACK_SECRET_KEY' in exports && 'STRIPE_WEBHOOK_SECRET' in exports, 'the demo exports its secrets');
  const cache = process.env.NODE_COMPILE_CACHE;
  const env = {
    PATH: process.env.PATH ?? '',
    DATABASE_URL: `sqlite:${join(dir, 'billing.db')}`,
    PORT: String(port),
    LOG_LEVEL: 'silent',
    ...(cache ? { NODE_COMPILE_CACHE: cache } : {}),
  };

  const server = spawn(process.execPath, [MAIN], {
    cwd: dir,
    env: { ...env, ...exports },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const served = run(server);
  t.after(async () => {
    server.kill('SIGTERM');
    await served;
  });
  let up = false;
  for (let i = 0; i < 300 && !up && server.exitCode === null; i++) {
    up = await fetch(`http://127.0.0.1:${port}/api/health`).then(
      (res) => res.ok,
      () => false,
    );
    if (!up) await new Promise((resolve) => setTimeout(resolve, 100));
  }
  assert.ok(up, `the server did not come up: ${(await Promise.race([served, Promise.resolve(undefined)]))?.stderr}`);

  const log = join(dir, 'curl.log');
  const tour = await run(
    spawn('bash', ['-c', PRELUDE + script], {
      cwd: dir,
      env: { ...env, TOUR_NODE: process.execPath, TOUR_BIN: BIN, TOUR_LOG: log, TOUR_BODY: join(dir, 'body') },
      // stdin not a socket: bash would take itself for an rsh session and read ~/.bashrc
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  );
  assert.equal(tour.code, 0, `${tour.stderr}\n--- stdout:\n${tour.stdout}`);
  const calls = readFileSync(log, 'utf8').trim().split('\n');
  assert.equal(calls.length, script.match(/^curl /gm)?.length, `every curl ran:\n${calls.join('\n')}`);
  assert.ok(calls.length >= 6, 'the tour calls the API');
  assert.match(tour.stdout, /Demo data created beside yours/);
  // The demo's story landed beside the quick start's customer, as the tour's curls show.
  assert.match(tour.stdout, /"email":"ada@example.com"/);
  assert.match(tour.stdout, /"hosted_invoice_url":"http:\/\/127\.0\.0\.1:\d+\/i\//);
  // The upgrade's preview and the invoice the change issued show the same proration lines.
  const lines = [...tour.stdout.matchAll(/"description":"((?:Unused|Remaining) time on [^"]+)","amount":(-?\d+)/g)].map(
    (match) => `${match[1]} ${match[2]}`,
  );
  assert.equal(lines.length, 4, tour.stdout);
  assert.deepEqual(lines.slice(0, 2), lines.slice(2));
  assert.match(lines[0]!, /^Unused time on Basic × 3 after .* -\d+$/);
  assert.match(lines[1]!, /^Remaining time on Pro × 5 after .* \d+$/);
});
