// The failed-authentication budget of a client IP (SPEC §2; docs/operations.md "Rate limits"):
// at most `max` requests per window may fail authentication. Counting happens BEFORE the key
// lookup: each keyed request takes a slot with one atomic increment and is compared after it,
// so however many arrive at once, at most `max` are looked up. The slot is spent when the
// answer is 401 and given back otherwise (authenticated, or refused before the lookup), so
// good keys do not use up the budget; they only hold a slot while being looked up.
// @fastify/rate-limit's stores cannot give a count back, hence these two small stores.
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';

/** A slot taken in the current window. */
export interface Slot {
  /** Requests counted in the window, this one included (slots given back are not). */
  count: number;
  /** Milliseconds until the window resets. */
  ttlMs: number;
  /** Which window the slot belongs to: a slot given back after its window ended changes nothing. */
  window: string;
}

/** Where the counts live: this process, or Redis (shared by every instance). */
export interface SlotStore {
  /** Adds one to `key`'s count (a new window of `windowMs` if none is running) and returns it. */
  take(key: string, windowMs: number): Promise<Slot>;
  /** Gives one back to `key`'s count, if `window` is still the running window. */
  giveBack(key: string, window: string): Promise<void>;
}

interface Entry {
  count: number;
  resetAt: number;
  window: string;
}

/** Counts in this process (one instance), at most `capacity` IPs, least recently seen dropped first. */
export class MemorySlotStore implements SlotStore {
  readonly #entries = new Map<string, Entry>();
  readonly #capacity: number;
  readonly #now: () => number;
  #windows = 0;

  constructor(capacity = 10_000, now: () => number = Date.now) {
    this.#capacity = capacity;
    this.#now = now;
  }

  async take(key: string, windowMs: number): Promise<Slot> {
    const now = this.#now();
    let entry = this.#entries.get(key);
    if (!entry || entry.resetAt <= now) {
      this.#windows += 1;
      entry = { count: 0, resetAt: now + windowMs, window: String(this.#windows) };
    }
    entry.count += 1;
    this.#entries.delete(key); // re-inserted last: the Map's order is least recently seen first
    this.#entries.set(key, entry);
    if (this.#entries.size > this.#capacity) this.#entries.delete(this.#entries.keys().next().value!);
    return { count: entry.count, ttlMs: entry.resetAt - now, window: entry.window };
  }

  async giveBack(key: string, window: string): Promise<void> {
    const entry = this.#entries.get(key);
    if (entry && entry.window === window && entry.count > 0) entry.count -= 1;
  }
}

// A hash per IP: n = the count, w = the window's id; the key expires with the window. A count
// back at 0 has nothing outstanding, so the next take may start a new window.
const TAKE = `
local n = redis.call('HINCRBY', KEYS[1], 'n', 1)
local ttl = redis.call('PTTL', KEYS[1])
if n == 1 or ttl < 0 then
  redis.call('HSET', KEYS[1], 'w', ARGV[2])
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {n, ttl, redis.call('HGET', KEYS[1], 'w')}
`;
const GIVE_BACK = `
if redis.call('HGET', KEYS[1], 'w') == ARGV[1] and tonumber(redis.call('HGET', KEYS[1], 'n')) > 0 then
  redis.call('HINCRBY', KEYS[1], 'n', -1)
end
return 0
`;

type ScriptedRedis = Redis & {
  failedAuthTake(key: string, windowMs: number, window: string): Promise<[number, number, string]>;
  failedAuthGiveBack(key: string, window: string): Promise<number>;
};

/** Counts in Redis, each take and give-back one atomic script, so every instance spends one budget. */
export class RedisSlotStore implements SlotStore {
  readonly #redis: ScriptedRedis;
  readonly #prefix: string;

  constructor(redis: Redis, prefix: string) {
    if (!('failedAuthTake' in redis)) {
      redis.defineCommand('failedAuthTake', { numberOfKeys: 1, lua: TAKE });
      redis.defineCommand('failedAuthGiveBack', { numberOfKeys: 1, lua: GIVE_BACK });
    }
    this.#redis = redis as ScriptedRedis;
    this.#prefix = prefix;
  }

  async take(key: string, windowMs: number): Promise<Slot> {
    const [count, ttlMs, window] = await this.#redis.failedAuthTake(this.#prefix + key, windowMs, randomUUID());
    return { count, ttlMs, window };
  }

  async giveBack(key: string, window: string): Promise<void> {
    await this.#redis.failedAuthGiveBack(this.#prefix + key, window);
  }
}
