// Whether the Redis that tests need answers (127.0.0.1:6379; every CI machine has one).
// A busy machine may take a while to accept a connection, so the probe is patient; and when
// REQUIRE_REDIS=1 (set by .ci/run) a Redis that does not answer fails the run instead of
// quietly skipping the tests that need it.
import { Socket } from 'node:net';

export const REDIS_URL = 'redis://127.0.0.1:6379';

function connects(timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = new Socket();
    socket.setTimeout(timeoutMs);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => {
      socket.destroy();
      resolve(false);
    });
    socket.connect(6379, '127.0.0.1');
  });
}

/**
 * The reason to skip Redis tests (a string for node:test's `skip`), or false when Redis
 * answers. Tries three times, 5 s each. Throws when REQUIRE_REDIS=1 and Redis is absent.
 */
export async function redisSkipReason(): Promise<string | false> {
  for (let attempt = 0; attempt < 3; attempt += 1) {
    if (await connects(5000)) return false;
  }
  if (process.env.REQUIRE_REDIS === '1') throw new Error('REQUIRE_REDIS=1 but Redis does not answer on 127.0.0.1:6379');
  return 'Redis does not answer on 127.0.0.1:6379';
}
