// autocannon measurements of several targets, interleaved: each target is warmed up once,
// then the measured time is cut into rounds that visit every target in turn, so a change in
// background load or CPU clock hits all targets alike. Latency percentiles come from every
// response's own timing (sub-millisecond), not autocannon's whole-millisecond histogram.
import autocannon, { type Instance, type Request } from 'autocannon';

export interface Target {
  /**
   * Base URL of the server, e.g. `http://127.0.0.1:4000`. Several URLs split the connections
   * among them round-robin (autocannon's own multi-URL support): load spread over instances.
   */
  url: string | string[];
  /** Request path (GET), or a function returning a new path for every request. */
  path: string | (() => string);
  headers?: Record<string, string>;
  /** autocannon requests to send instead of GET `path` (e.g. signed POSTs built per request). */
  requests?: Request[];
  /**
   * The server's CPU seconds so far (RunningServer.cpuSeconds); read before and after each
   * slice, so the Measurement carries the server's CPU time per request.
   */
  cpuSeconds?: () => number | undefined;
}

export interface Schedule {
  connections: number;
  /** Measured seconds per target, in total over all rounds. */
  duration: number;
  /** Seconds of load per target before measuring (0 = none). */
  warmup: number;
  /** How many slices the measured time of each target is cut into. */
  rounds: number;
}

export interface Measurement {
  /** Responses per second over the measured time (2xx or not). */
  rps: number;
  p50Ms: number;
  p99Ms: number;
  requests: number;
  /** Responses that were not 2xx, plus socket errors and timeouts: should be 0. */
  failures: number;
  /**
   * The server's CPU time per response in ms (its process, all threads, over the measured
   * slices), when the target can read it: independent of other load on the machine.
   */
  cpuMsPerRequest?: number;
}

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank]!;
}

function load(target: Target, connections: number, seconds: number, latencies?: number[]): Instance {
  const { path } = target;
  const requests: Request[] =
    target.requests ??
    (typeof path === 'string' ? [{ path }] : [{ setupRequest: (request) => ({ ...request, path: path() }) }]);
  const instance = autocannon({ url: target.url, connections, duration: seconds, headers: target.headers, requests });
  if (latencies) instance.on('response', (_client, _status, _bytes, ms) => latencies.push(ms));
  return instance;
}

/**
 * Measures every target for `schedule.duration` seconds in total, in `schedule.rounds`
 * interleaved slices, after one warm-up each. Returns one Measurement per target, in order.
 * `onRound` is called after each round (for progress output).
 */
export async function measureAll(
  targets: readonly Target[],
  schedule: Schedule,
  onRound: (round: number) => void = () => {},
): Promise<Measurement[]> {
  const { connections, warmup, rounds } = schedule;
  if (warmup > 0) for (const target of targets) await load(target, connections, warmup);
  const totals = targets.map(() => ({
    latencies: [] as number[],
    seconds: 0,
    failures: 0,
    cpu: 0 as number | undefined,
  }));
  for (let round = 1; round <= rounds; round += 1) {
    for (const [i, target] of targets.entries()) {
      const total = totals[i]!;
      const cpuBefore = target.cpuSeconds?.();
      const result = await load(target, connections, schedule.duration / rounds, total.latencies);
      const cpuAfter = target.cpuSeconds?.();
      total.cpu =
        total.cpu === undefined || cpuBefore === undefined || cpuAfter === undefined
          ? undefined
          : total.cpu + (cpuAfter - cpuBefore);
      total.seconds += result.duration;
      total.failures += result.non2xx + result.errors + result.timeouts;
    }
    onRound(round);
  }
  return totals.map(({ latencies, seconds, failures, cpu }) => {
    const sorted = Float64Array.from(latencies).sort();
    const requests = latencies.length;
    return {
      rps: requests / seconds,
      p50Ms: percentile(sorted, 50),
      p99Ms: percentile(sorted, 99),
      requests,
      failures,
      cpuMsPerRequest: cpu === undefined || requests === 0 ? undefined : (cpu * 1000) / requests,
    };
  });
}
