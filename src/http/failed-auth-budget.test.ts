// The failed-auth slot stores: take counts first and returns the count; a slot given back
// returns to its own window only (in memory, and in the real Redis when it answers).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { Redis } from 'ioredis';
import { MemorySlotStore, RedisSlotStore, type SlotStore } from './failed-auth-budget.ts';
import { redisSkipReason } from '../../test/helpers/redis.ts';

/** `windowMs` must outlast the steps on a loaded machine where time is real (Redis). */
async function windowRules(
  store: SlotStore,
  key: string,
  windowMs: number,
  endWindow: () => Promise<void>,
): Promise<void> {
  const first = await store.take(key, windowMs);
  const second = await store.take(key, windowMs);
  assert.deepEqual([first.count, second.count], [1, 2]);
  assert.ok(second.ttlMs > 0 && second.ttlMs <= windowMs);
  await store.giveBack(key, second.window);
  assert.equal((await store.take(key, windowMs)).count, 2, 'a slot given back is free again');
  await endWindow();
  const fresh = await store.take(key, windowMs);
  assert.equal(fresh.count, 1, 'a new window starts from zero');
  await store.giveBack(key, first.window); // from the window that ended: changes nothing
  assert.equal((await store.take(key, windowMs)).count, 2);
}

test('in memory: count first, a slot given back frees it, only within its own window', async () => {
  let now = 1_000;
  const store = new MemorySlotStore(10, () => now);
  await windowRules(store, 'ip', 200, async () => {
    now += 250;
  });
});

test('in memory: at most `capacity` IPs are kept, the least recently seen dropped first', async () => {
  const store = new MemorySlotStore(2, () => 0);
  await store.take('a', 1000);
  await store.take('b', 1000);
  await store.take('a', 1000);
  await store.take('c', 1000); // drops b
  assert.equal((await store.take('a', 1000)).count, 3);
  assert.equal((await store.take('b', 1000)).count, 1);
});

const redis = new Redis('redis://127.0.0.1:6379', {
  lazyConnect: true,
  maxRetriesPerRequest: 0,
  retryStrategy: () => null,
});
redis.on('error', () => {});
const noRedis = await redisSkipReason();
if (!noRedis) await redis.connect();

test('in Redis: the same rules, each step one atomic script', { skip: noRedis }, async (t) => {
  const prefix = `test-${randomBytes(6).toString('hex')}:`;
  t.after(async () => {
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length > 0) await redis.del(...keys);
    await redis.quit();
  });
  // Redis keeps its own time; the window ending is the key expiring, done here at once (the
  // window is long so a busy machine cannot end it between two steps).
  await windowRules(new RedisSlotStore(redis, prefix), 'ip', 60_000, async () => {
    await redis.del(`${prefix}ip`);
  });
});
