// Per-file CPU seconds for `TEST_CPU_REPORT=1 npm test` (scripts/test.ts): a shard imports its
// files one after another and their top-level tests run in that order, so a marker test
// queued after each file's tests reads the CPU the process (and the child processes it
// waited for: spawned `billing`s, Chromium) used since the previous marker. Wall durations
// swing with the machine's load; CPU seconds barely do.
import { appendFileSync, readFileSync } from 'node:fs';
import { test } from 'node:test';

const TICKS_PER_SECOND = 100; // USER_HZ, 100 on Linux

/** Seconds of CPU used so far: this process (user + system) and its reaped children. */
function cpuSeconds(): { self: number; children: number } {
  // /proc/self/stat fields 14–17 (utime, stime, cutime, cstime), after the ") " closing the name.
  const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1]!.split(' ');
  const [utime, stime, cutime, cstime] = fields.slice(11, 15).map(Number) as [number, number, number, number];
  return { self: (utime + stime) / TICKS_PER_SECOND, children: (cutime + cstime) / TICKS_PER_SECOND };
}

let last = { self: 0, children: 0 };

/**
 * Queues a test that appends `{ file, self, children }` (CPU seconds since the previous mark;
 * the first mark's `file` is "(start-up)": loading the runner and the shard) as a JSON line
 * to `out`.
 */
export function markCpu(file: string, out: string): void {
  test(`(CPU of ${file})`, () => {
    const now = cpuSeconds();
    const line = { file, self: now.self - last.self, children: now.children - last.children };
    last = now;
    appendFileSync(out, JSON.stringify(line) + '\n');
  });
}
