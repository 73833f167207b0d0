// node:test keeps every test's `after` hooks, and all they close over, until the process
// exits: a helper's hook that closes an app or a server would keep it in memory for the rest
// of the run (≈ 1.4 MB a test app; test files share a process, see scripts/test.ts).
import type { TestContext } from 'node:test';

/** Runs `fn` when `t` ends, as `t.after` does, then lets go of it (and of what it holds). */
export function afterTest(t: TestContext, fn: () => unknown): void {
  let pending: (() => unknown) | undefined = fn;
  t.after(async () => {
    const run = pending;
    pending = undefined;
    await run?.();
  });
}
