// `npm test`: the whole suite on SQLite, then — when TEST_DATABASE_URL names PostgreSQL —
// the same suite again on PostgreSQL. Extra arguments select test files.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { globSync, mkdtempSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const pgUrl = process.env.TEST_DATABASE_URL ?? '';
const selected = process.argv.slice(2);
const files = selected.length > 0 ? selected : globSync('{src,test}/**/*.test.ts').sort();
// Test files spend part of their time waiting on sockets, child processes and the database:
// one process more than there are cores keeps the cores busy. TEST_CONCURRENCY overrides.
const concurrency = Number(process.env.TEST_CONCURRENCY ?? Math.max(2, availableParallelism() + 1));
// Test files run in a few processes (shards), several files each, rather than a process per
// file: a process pays ≈ 2.5 s of CPU to load the app, migrate its template database and
// compile the route schemas its tests reach, and 100+ files paid it 100+ times. Each test
// still owns its data (its own in-memory SQLite or PostgreSQL schema) and no test changes
// process-wide state. One shard per process at once: the shards are balanced on the files'
// measured durations (below), so they end together, and each shard more would cost its
// start-up again (9 shards instead of 3 cost ≈ 15 s more CPU; docs/testing.md).
// TEST_SHARDS overrides; TEST_SHARDS=0 runs a process per file.
const shardCount = Math.min(files.length, Number(process.env.TEST_SHARDS ?? concurrency));

// Every test process loads (and strips the types of) the whole app: Node's compile cache
// halves that start-up (≈ 1 s → 0.5 s of CPU). Entries are keyed by the source's hash, so a
// stale cache is never used.
const compileCache = process.env.NODE_COMPILE_CACHE ?? join(tmpdir(), 'billing-test-compile-cache');
const TIMINGS_REPORTER = fileURLToPath(new URL('./test-timings.ts', import.meta.url));
// TEST_CPU_REPORT=1: each shard also measures the CPU seconds of each of its files
// (scripts/test-cpu.ts); the run prints the most expensive and keeps them all beside the timings.
const cpuReport = process.env.TEST_CPU_REPORT === '1';
const CPU_MARKER = pathToFileURL(fileURLToPath(new URL('./test-cpu.ts', import.meta.url))).href;

/** The tests that drive Chromium (test/helpers/browser.ts). */
const BROWSER_TEST = /\.browser\.test\.ts$/;

/** Milliseconds by test file path, as scripts/test-timings.ts reports them. */
type Timings = Record<string, number>;

/** Where the last measured durations of this checkout's `label` pass are kept. */
function timingsPath(label: string): string {
  const checkout = createHash('sha256').update(process.cwd()).digest('hex').slice(0, 12);
  return join(tmpdir(), `billing-test-timings-${checkout}-${label}.json`);
}

/**
 * The durations committed with the suite (`scripts/test-timings.<label>.json`): refresh by
 * copying a quiet run's file from timingsPath(label) when files are added or grow.
 */
function committedTimingsPath(label: string): string {
  return fileURLToPath(new URL(`./test-timings.${label}.json`, import.meta.url));
}

function readTimings(path: string): Timings {
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as Timings;
  } catch {
    return {}; // no run measured yet (or a half-written file): sizes stand in
  }
}

/**
 * Splits `paths` into `count` shards of about equal expected time, the slowest shard first:
 * a file's last measured duration, or for a file never measured, its size at the measured
 * files' milliseconds per byte (a rough guess: 1 ms a byte when nothing was measured).
 */
function splitIntoShards(paths: string[], count: number, timings: Timings): string[][] {
  const sized = paths.map((path) => ({ path, bytes: statSync(path).size, ms: timings[path] }));
  const measured = sized.filter((file) => file.ms !== undefined);
  const measuredBytes = measured.reduce((sum, file) => sum + file.bytes, 0);
  const msPerByte = measuredBytes > 0 ? measured.reduce((sum, file) => sum + file.ms!, 0) / measuredBytes : 1;
  const weighed = sized.map((file) => ({ paths: [file.path], weight: file.ms ?? file.bytes * msPerByte }));
  // The browser tests go to one shard together: one Chromium at a time, never two competing
  // for the cores with each other as well as with the other shards.
  const browser = weighed.filter((file) => BROWSER_TEST.test(file.paths[0]!));
  const units = [
    ...weighed.filter((file) => !BROWSER_TEST.test(file.paths[0]!)),
    ...(browser.length > 0
      ? [{ paths: browser.flatMap((file) => file.paths), weight: browser.reduce((sum, file) => sum + file.weight, 0) }]
      : []),
  ];
  const shards = Array.from({ length: count }, () => ({ weight: 0, files: [] as string[] }));
  for (const unit of units.sort((a, b) => b.weight - a.weight)) {
    const lightest = shards.reduce((min, shard) => (shard.weight < min.weight ? shard : min));
    lightest.weight += unit.weight;
    lightest.files.push(...unit.paths);
  }
  return shards
    .filter((shard) => shard.files.length > 0)
    .sort((a, b) => b.weight - a.weight)
    .map((shard) => shard.files.sort());
}

/**
 * The files the test runner is given: each file itself, or — with shards — one generated
 * module per shard, in `dir`, importing its files in turn (their tests then run one after
 * another in that process; a failing test is still reported at its own file and line). A
 * file that fails to load is reported as a failing test named after it, and the shard goes
 * on with its other files.
 */
function runnerFiles(dir: string, timings: Timings): string[] {
  if (shardCount <= 0) return files;
  const cpuOut = JSON.stringify(join(dir, 'cpu.jsonl'));
  return splitIntoShards(files, shardCount, timings).map((shard, index) => {
    const path = join(dir, `shard-${index + 1}-of-${shardCount}.mjs`);
    const lines = shard.map((file) => {
      const url = JSON.stringify(pathToFileURL(resolve(file)).href);
      const name = JSON.stringify(`${file} loads`);
      const mark = cpuReport ? `\nmarkCpu(${JSON.stringify(file)}, ${cpuOut});` : '';
      return `try { await import(${url}); } catch (error) { test(${name}, () => { throw error; }); }${mark}`;
    });
    const head = cpuReport
      ? `import { markCpu } from ${JSON.stringify(CPU_MARKER)};\nmarkCpu('(start-up)', ${cpuOut});\n`
      : '';
    writeFileSync(path, `import { test } from 'node:test';\n${head}${lines.join('\n')}\n`);
    return path;
  });
}

/**
 * Sums the CPU marks of `jsonl` (scripts/test-cpu.ts) by file, writes them to `out` and prints
 * the total and the ten most expensive files.
 */
function reportCpu(jsonl: string, out: string): void {
  let text: string;
  try {
    text = readFileSync(jsonl, 'utf8');
  } catch {
    return; // no shard got as far as a mark
  }
  const byFile: Record<string, number> = {};
  for (const line of text.split('\n').filter(Boolean)) {
    const mark = JSON.parse(line) as { file: string; self: number; children: number };
    byFile[mark.file] = Math.round(((byFile[mark.file] ?? 0) + mark.self + mark.children) * 100) / 100;
  }
  writeFileSync(out, JSON.stringify(byFile, null, 2));
  const total = Object.values(byFile).reduce((sum, seconds) => sum + seconds, 0);
  const top = Object.entries(byFile)
    .sort((a, b) => b[1] - a[1])
    .slice(0, 10)
    .map(([file, seconds]) => `  ${seconds.toFixed(1).padStart(6)} s  ${file}`);
  process.stdout.write(`\nCPU seconds in test processes: ${total.toFixed(1)} (all files: ${out})\n${top.join('\n')}\n`);
}

function run(label: string, databaseUrl: string | undefined): boolean {
  const how = shardCount > 0 ? `in ${shardCount} processes` : 'a process each';
  process.stdout.write(`\n=== tests on ${label} (${files.length} files, ${how}) ===\n`);
  const env: NodeJS.ProcessEnv = { ...process.env, NODE_COMPILE_CACHE: compileCache };
  delete env.TEST_DATABASE_URL;
  if (databaseUrl) env.TEST_DATABASE_URL = databaseUrl;
  const timingsFile = timingsPath(label);
  // A checkout's own measurements, over the durations committed beside this script (a fresh
  // clone's first run is balanced by them instead of by file sizes).
  const timings = { ...readTimings(committedTimingsPath(label)), ...readTimings(timingsFile) };
  const dir = mkdtempSync(join(tmpdir(), 'billing-test-shards-'));
  try {
    const measured = join(dir, 'timings.json');
    const result = spawnSync(
      process.execPath,
      [
        '--test',
        `--test-concurrency=${concurrency}`,
        '--test-reporter=spec',
        '--test-reporter-destination=stdout',
        `--test-reporter=${TIMINGS_REPORTER}`,
        `--test-reporter-destination=${measured}`,
        ...runnerFiles(dir, timings),
      ],
      { stdio: 'inherit', env },
    );
    // Written whole, then renamed: a run starting meanwhile never reads half of it.
    writeFileSync(`${timingsFile}.${process.pid}`, JSON.stringify({ ...timings, ...readTimings(measured) }));
    renameSync(`${timingsFile}.${process.pid}`, timingsFile);
    if (cpuReport) reportCpu(join(dir, 'cpu.jsonl'), timingsFile.replace('-timings-', '-cpu-'));
    return result.status === 0;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Fills Node's compile cache before the test processes start: with it empty (a fresh clone),
 * every process compiled the same sources at once — ≈ 40 s of CPU more for the suite. One
 * process importing the app's modules and the test helpers compiles each once (≈ 1–2 s).
 * src/main.ts is left out: importing it starts the service.
 */
function warmCompileCache(): void {
  const modules = globSync('{src/**/*.ts,test/helpers/*.ts}')
    .filter((path) => !path.endsWith('.test.ts') && path !== join('src', 'main.ts'))
    .map((path) => pathToFileURL(resolve(path)).href);
  const script = modules.map((url) => `await import(${JSON.stringify(url)});`).join('\n');
  spawnSync(process.execPath, ['--input-type=module', '-e', script], {
    stdio: 'ignore',
    env: { ...process.env, NODE_COMPILE_CACHE: compileCache, LOG_LEVEL: 'silent' },
  });
}

warmCompileCache();
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
