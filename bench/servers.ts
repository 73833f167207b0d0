// Servers under test run as child processes, so autocannon (in the bench process) never
// shares an event loop with them. Starts them on a free port, waits until they answer,
// and stops them; `stopAllServers` is the safety net for errors and Ctrl-C.
//
// Where `taskset` exists and there are at least 2 CPUs, `pinApart()` puts the bench process
// (the load generator) on every CPU but the first and makes every server started afterwards
// run on the first: load and server never compete for one core. Each server's own CPU time
// (utime + stime of /proc/<pid>/stat, all threads) lets the bench report CPU per request,
// a figure that does not depend on what else the machine runs.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { cpus } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';

const START_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 5_000;

export interface RunningServer {
  /** `http://127.0.0.1:<port>` */
  url: string;
  /** Sends SIGTERM (SIGKILL after 5 s) and waits for the exit. */
  stop(): Promise<void>;
  /** CPU seconds the server process has used so far (all threads), or undefined without /proc. */
  cpuSeconds(): number | undefined;
  /** The server's process id. */
  pid: number | undefined;
}

export interface ServerOptions {
  /**
   * CPUs for the server (a taskset list such as `0`), or null to leave it unpinned.
   * Default: the server CPUs chosen by pinApart(), if it pinned anything.
   */
  cpus?: string | null;
}

const running = new Set<ChildProcess>();
/** Linux USER_HZ: the unit of utime/stime in /proc/<pid>/stat (100 on every mainstream kernel). */
const CLOCK_TICKS_PER_SECOND = 100;
let serverCpus: string | undefined;

export interface Pinning {
  /** CPUs the servers run on, e.g. `0`. */
  server: string;
  /** CPUs the bench process (autocannon) runs on, e.g. `1`. */
  load: string;
}

/**
 * Pins the bench process (all its threads) to CPUs 1…n−1 and makes servers started from now
 * on run on CPU 0. Returns the pinning, or undefined (nothing pinned) where `taskset` does
 * not exist or the machine has a single CPU.
 */
export function pinApart(): Pinning | undefined {
  const count = cpus().length;
  if (count < 2) return undefined;
  const pinning = { server: '0', load: count === 2 ? '1' : `1-${count - 1}` };
  const result = spawnSync('taskset', ['-a', '-p', '-c', pinning.load, String(process.pid)], { stdio: 'ignore' });
  if (result.error || result.status !== 0) return undefined;
  serverCpus = pinning.server;
  return pinning;
}

/** The CPUs pinApart() gave the servers (e.g. `0`), or undefined when nothing is pinned. */
export function pinnedServerCpus(): string | undefined {
  return serverCpus;
}

/**
 * Pins this process (all its threads: the load generator) to `cpus` (a taskset list).
 * Returns false where that failed (no taskset).
 */
export function pinLoad(cpus: string): boolean {
  const result = spawnSync('taskset', ['-a', '-p', '-c', cpus, String(process.pid)], { stdio: 'ignore' });
  return !result.error && result.status === 0;
}

/** The CPUs `pid` may run on, as the kernel reports them (`Cpus_allowed_list`), or undefined. */
export function allowedCpus(pid: number): string | undefined {
  try {
    return /^Cpus_allowed_list:\s*(\S+)$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  } catch {
    return undefined;
  }
}

/** utime + stime of process `pid` in seconds, or undefined (no /proc, or it exited). */
export function processCpuSeconds(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the parenthesised command name (which may contain spaces): utime is the 14th
    // field of the line, stime the 15th, i.e. the 12th and 13th after ")".
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND;
  } catch {
    return undefined;
  }
}

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
 * PORT/HOST set (under `taskset -c <cpus>` when pinned, see ServerOptions), then polls
 * `readyPath` until it answers 200. Throws (after stopping the child) when the child exits
 * first or does not answer within 60 s.
 */
export async function startServer(
  script: string,
  env: Record<string, string>,
  readyPath: string,
  options: ServerOptions = {},
): Promise<RunningServer> {
  // The free port may be taken by another process before the child listens on it (a shared
  // machine): a child that exits before answering is started again on a new port, twice.
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await startOnce(script, env, readyPath, options);
    } catch (error) {
      if (attempt >= 3 || !(error instanceof ExitedEarly)) throw error;
    }
  }
}

class ExitedEarly extends Error {}

async function startOnce(
  script: string,
  env: Record<string, string>,
  readyPath: string,
  options: ServerOptions,
): Promise<RunningServer> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const pin = options.cpus === undefined ? serverCpus : (options.cpus ?? undefined);
  const node = [process.execPath, '--disable-warning=ExperimentalWarning', script];
  // taskset execs node in its own process, so the child's pid is the server's.
  const [command, ...args] = pin === undefined ? node : ['taskset', '-c', pin, ...node];
  const child = spawn(command!, args, {
    env: { ...process.env, ...env, PORT: String(port), HOST: '127.0.0.1' },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  running.add(child);
  const stop = () => stopChild(child);
  const cpuSeconds = () => processCpuSeconds(child.pid);
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) {
      running.delete(child);
      throw new ExitedEarly(`${script} exited (${child.exitCode ?? child.signalCode}) before answering ${readyPath}`);
    }
    try {
      const response = await fetch(url + readyPath, { signal: AbortSignal.timeout(1_000) });
      await response.arrayBuffer();
      if (response.ok) return { url, stop, cpuSeconds, pid: child.pid };
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

/**
 * A bench setting from the environment: `name`'s value as a whole number ≥ 1, or `fallback`
 * when unset or blank. Throws naming the variable when it is anything else.
 */
export function wholeNumberSetting(name: string, fallback: number): number {
  const text = process.env[name];
  const value = text === undefined || text.trim() === '' ? fallback : Number(text);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a whole number ≥ 1 (got "${text}")`);
  return value;
}
