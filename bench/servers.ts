// Servers under test run as child processes, so autocannon (in the bench process) never
// shares an event loop with them. Starts them on a free port, waits until they answer,
// and stops them; `stopAllServers` is the safety net for errors and Ctrl-C.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

const START_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 5_000;

export interface RunningServer {
  /** `http://127.0.0.1:<port>` */
  url: string;
  /** Sends SIGTERM (SIGKILL after 5 s) and waits for the exit. */
  stop(): Promise<void>;
}

const running = new Set<ChildProcess>();

/** A TCP port nothing listens on right now (the OS picks it). */
export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  server.close();
  await once(server, 'close');
  if (address === null || typeof address === 'string') throw new Error('could not find a free port');
  return address.port;
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) {
    running.delete(child);
    return;
  }
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
  await exited;
  clearTimeout(timer);
  running.delete(child);
}

/**
 * Spawns `process.execPath script` with `env` added to this process's environment and
 * PORT/HOST set, then polls `readyPath` until it answers 200. Throws (after stopping the
 * child) when the child exits first or does not answer within 60 s.
 */
export async function startServer(
  script: string,
  env: Record<string, string>,
  readyPath: string,
): Promise<RunningServer> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child = spawn(process.execPath, ['--disable-warning=ExperimentalWarning', script], {
    env: { ...process.env, ...env, PORT: String(port), HOST: '127.0.0.1' },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  running.add(child);
  const stop = () => stopChild(child);
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) {
      running.delete(child);
      throw new Error(`${script} exited (${child.exitCode ?? child.signalCode}) before answering ${readyPath}`);
    }
    try {
      const response = await fetch(url + readyPath, { signal: AbortSignal.timeout(1_000) });
      await response.arrayBuffer();
      if (response.ok) return { url, stop };
    } catch {
      // not listening yet
    }
    await sleep(100);
  }
  await stop();
  throw new Error(`${script} did not answer ${readyPath} within ${START_TIMEOUT_MS / 1000} s`);
}

/** Kills every server still running (used on errors and signals). */
export async function stopAllServers(): Promise<void> {
  await Promise.all([...running].map(stopChild));
}
