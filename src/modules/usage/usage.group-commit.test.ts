// Group commit (usage.group-commit.ts), without a database: what is submitted in one turn of
// the event loop runs as one group, groups are bounded by weight and by how many run at once,
// and a failing item fails alone.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { GroupCommit } from './usage.group-commit.ts';

/** A GroupCommit over numbers whose run doubles them, recording each group; `bad` throws. */
function doubling(options: { maxInFlight?: number; maxWeight?: number; bad?: number } = {}) {
  const groups: number[][] = [];
  let running = 0;
  let mostRunning = 0;
  const commit = new GroupCommit<number, number>({
    run: async (items) => {
      groups.push(items);
      running += 1;
      mostRunning = Math.max(mostRunning, running);
      await new Promise((resolve) => setTimeout(resolve, 1));
      running -= 1;
      if (options.bad !== undefined && items.includes(options.bad)) throw new Error(`bad item ${options.bad}`);
      return items.map((n) => n * 2);
    },
    maxInFlight: options.maxInFlight ?? 1,
    weight: (n) => n,
    maxWeight: options.maxWeight ?? 1_000,
  });
  return { commit, groups, mostRunning: () => mostRunning };
}

test('items submitted in one turn run as one group; each gets its own answer in order', async () => {
  const { commit, groups } = doubling();
  const answers = await Promise.all([1, 2, 3, 4].map((n) => commit.submit(n)));
  assert.deepEqual(answers, [2, 4, 6, 8]);
  assert.deepEqual(groups, [[1, 2, 3, 4]]);
  assert.deepEqual(commit.stats(), { groups: 1, items: 4, weight: 10 });
});

test('a group holds at most maxWeight (or one heavier item); at most maxInFlight groups run at once', async () => {
  const { commit, groups, mostRunning } = doubling({ maxInFlight: 2, maxWeight: 5 });
  const answers = await Promise.all([3, 2, 4, 9, 1].map((n) => commit.submit(n)));
  assert.deepEqual(answers, [6, 4, 8, 18, 2]);
  assert.deepEqual(groups, [[3, 2], [4], [9], [1]]);
  assert.equal(mostRunning(), 2);
});

test('items submitted while a group runs wait for it and then run together', async () => {
  const { commit, groups } = doubling();
  const first = commit.submit(1);
  await new Promise((resolve) => setImmediate(resolve));
  const later = [2, 3].map((n) => commit.submit(n));
  assert.deepEqual(await Promise.all([first, ...later]), [2, 4, 6]);
  assert.deepEqual(groups, [[1], [2, 3]]);
});

test('a failing group runs its items alone: only the failing item sees the error', async () => {
  const { commit, groups } = doubling({ bad: 2 });
  const outcomes = await Promise.allSettled([1, 2, 3].map((n) => commit.submit(n)));
  assert.deepEqual(
    outcomes.map((o) => (o.status === 'fulfilled' ? o.value : (o.reason as Error).message)),
    [2, 'bad item 2', 6],
  );
  assert.deepEqual(groups, [[1, 2, 3], [1], [2], [3]]);
});
