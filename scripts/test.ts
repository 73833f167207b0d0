// `npm test`: the whole suite on SQLite, then — when TEST_DATABASE_URL names PostgreSQL —
// the same suite again on PostgreSQL. Extra arguments select test files.
import { spawnSync } from 'node:child_process';
import { globSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';

const pgUrl = process.env.TEST_DATABASE_URL ?? '';
const selected = process.argv.slice(2);
const files = selected.length > 0 ? selected : globSync('{src,test}/**/*.test.ts').sort();
// Test files spend most of their time waiting on sockets and the database, not on a core:
// running more files than cores at once (Node's default is cores − 1) shortens the run.
// Each test owns its data (its own in-memory SQLite or PostgreSQL schema), so files never
// share state. TEST_CONCURRENCY overrides.
const concurrency = Number(process.env.TEST_CONCURRENCY ?? Math.max(2, availableParallelism() + 1));

// Every test file is its own process that loads (and strips the types of) the whole app:
// Node's compile cache halves that start-up (≈ 1 s → 0.5 s of CPU each). Entries are keyed
// by the source's hash, so a stale cache is never used.
const compileCache = process.env.NODE_COMPILE_CACHE ?? join(tmpdir(), 'billing-test-compile-cache');

function run(label: string, databaseUrl: string | undefined): boolean {
  process.stdout.write(`\n=== tests on ${label} (${files.length} files) ===\n`);
  const env: NodeJS.ProcessEnv = { ...process.env, NODE_COMPILE_CACHE: compileCache };
  delete env.TEST_DATABASE_URL;
  if (databaseUrl) env.TEST_DATABASE_URL = databaseUrl;
  const result = spawnSync(
    process.execPath,
    ['--test', `--test-concurrency=${concurrency}`, '--test-reporter=spec', ...files],
    {
      stdio: 'inherit',
      env,
    },
  );
  return result.status === 0;
}

let ok = run('SQLite', undefined);
if (pgUrl) {
  if (!/^postgres(ql)?:\/\//.test(pgUrl)) {
    process.stderr.write(`TEST_DATABASE_URL must be a postgres:// URL (got "${pgUrl}")\n`);
    process.exit(2);
  }
  ok = run('PostgreSQL', pgUrl) && ok;
} else {
  process.stdout.write('\n(TEST_DATABASE_URL not set: PostgreSQL pass skipped; CI sets it)\n');
}
process.exit(ok ? 0 : 1);
