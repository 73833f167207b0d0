// The one summary table `npm run bench` ends with: every ratio of docs/performance.md's table, its
// target, and met/missed, from figures measured in this run. The notify, PostgreSQL and
// deliveries sections report theirs as their functions' return values (the *Figures shapes
// below); a figure a section did not return (or could not measure) prints "not measured".
import type { Measurement } from './measure.ts';

/** What benchNotify returns (all optional: read defensively). */
export interface NotifyFigures {
  /** Acknowledged events per second, and the bare route's req/s of the same rounds. */
  rps?: number;
  bareRps?: number;
  /** The app's CPU time per event, ms. */
  cpuMsPerEvent?: number;
}

/** What benchPostgres returns. */
export interface PostgresFigures {
  /** Events per second into one instance. */
  notifyOneRps?: number;
  /** Statements sent to PostgreSQL per provider event (counted). */
  roundTripsPerEvent?: number;
  /** CPU ms per event of the instance, and of PostgreSQL's processes, under the notify load. */
  appCpuMsPerEvent?: number;
  postgresCpuMsPerEvent?: number;
}

/** What benchDeliveries returns. */
export interface DeliveriesFigures {
  /** Deliveries per second in the burst. */
  burstPerSecond?: number;
  /** p99 commit → receipt of the paced phase, ms. */
  pacedP99Ms?: number;
}

export interface SummaryInput {
  bare: Measurement;
  minimal: Measurement;
  smallList: Measurement;
  /** The big list with the response cache (the default). */
  bigList: Measurement;
  /** The same list with RESPONSE_CACHE_MB=0: every request reads the database. */
  uncachedList: Measurement;
  smallRows: number;
  bigRows: number;
  /** Return values of the sections (anything: only numeric fields of the shapes above are read). */
  notify: unknown;
  postgres: unknown;
  deliveries: unknown;
}

/** A numeric field of a section's return value, or undefined. */
function figure(value: unknown, field: string): number | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const found = (value as Record<string, unknown>)[field];
  return typeof found === 'number' && Number.isFinite(found) ? found : undefined;
}

interface SummaryRow {
  figure: string;
  measured: string;
  target: string;
  verdict: string;
}

const times = (n: number) => `${n.toFixed(2)}×`;
const count = (n: number) => Math.round(n).toLocaleString('en-US');
const NOT_MEASURED = 'not measured';

function row(
  name: string,
  value: number | undefined,
  target: string,
  met: (value: number) => boolean,
  show: (value: number) => string,
  note = '',
): SummaryRow {
  if (value === undefined) return { figure: name, measured: NOT_MEASURED, target, verdict: '—' };
  return { figure: name, measured: show(value) + note, target, verdict: met(value) ? 'met' : 'MISSED' };
}

/** CPU-time ratio `slower ÷ faster` in "×" form, as an aside to a req/s ratio. */
function cpuNote(numerator: Measurement, denominator: Measurement): string {
  const a = numerator.cpuMsPerRequest;
  const b = denominator.cpuMsPerRequest;
  if (a === undefined || b === undefined || a === 0) return '';
  return ` (CPU/request: ${times(b / a)})`;
}

/**
 * The CPU side of the PostgreSQL ÷ SQLite notify ratio (load-independent): the SQLite app's CPU
 * per event ÷ the PostgreSQL instance's, and what PostgreSQL's own processes spend per event.
 */
function postgresCpuNote(input: SummaryInput): string {
  const sqlite = figure(input.notify, 'cpuMsPerEvent');
  const instance = figure(input.postgres, 'appCpuMsPerEvent');
  const server = figure(input.postgres, 'postgresCpuMsPerEvent');
  if (sqlite === undefined || instance === undefined || instance === 0) return '';
  const serverNote = server === undefined ? '' : `, PostgreSQL itself +${server.toFixed(2)} ms`;
  return ` (CPU/event: SQLite app ÷ instance ${times(sqlite / instance)}${serverNote})`;
}

/** The summary rows, in the order of docs/performance.md's summary table. */
export function summaryRows(input: SummaryInput): SummaryRow[] {
  const { bare, minimal, smallList, bigList, uncachedList } = input;
  const notifyRps = figure(input.notify, 'rps');
  const notifyBare = figure(input.notify, 'bareRps');
  const pgNotify = figure(input.postgres, 'notifyOneRps');
  return [
    row(
      `list @ ${count(input.bigRows)}, cache on ÷ bare Fastify (req/s)`,
      bigList.rps / bare.rps,
      '≥ 0.40 (stretch)',
      (v) => v >= 0.4,
      times,
      cpuNote(bigList, bare),
    ),
    row(
      `list @ ${count(input.bigRows)}, cache off ÷ minimal route (req/s)`,
      uncachedList.rps / minimal.rps,
      '≥ 0.80',
      (v) => v >= 0.8,
      times,
      cpuNote(uncachedList, minimal),
    ),
    row(
      `list @ ${count(input.bigRows)}, cache on ÷ minimal route (req/s)`,
      bigList.rps / minimal.rps,
      '≥ 0.80',
      (v) => v >= 0.8,
      times,
      cpuNote(bigList, minimal),
    ),
    row(
      `list p50 @ ${count(input.bigRows)} ÷ @ ${count(input.smallRows)}`,
      bigList.p50Ms / smallList.p50Ms,
      '≤ 1.5',
      (v) => v <= 1.5,
      times,
    ),
    row(
      'notify ÷ bare Fastify (req/s)',
      notifyRps !== undefined && notifyBare !== undefined ? notifyRps / notifyBare : undefined,
      '≥ 0.06',
      (v) => v >= 0.06,
      times,
    ),
    row(
      'notify app CPU per event',
      figure(input.notify, 'cpuMsPerEvent'),
      '≤ 0.5 ms',
      (v) => v <= 0.5,
      (v) => `${v.toFixed(2)} ms`,
    ),
    row(
      'PostgreSQL round trips per provider event',
      figure(input.postgres, 'roundTripsPerEvent'),
      '≤ 4',
      (v) => v <= 4,
      (v) => v.toFixed(1),
    ),
    row(
      'PostgreSQL notify, 1 instance ÷ SQLite notify',
      pgNotify !== undefined && notifyRps !== undefined ? pgNotify / notifyRps : undefined,
      '≥ 0.5',
      (v) => v >= 0.5,
      times,
      postgresCpuNote(input),
    ),
    row(
      'webhook deliveries, burst',
      figure(input.deliveries, 'burstPerSecond'),
      'keep (≥ 1,000/s)',
      (v) => v >= 1000,
      (v) => `${count(v)}/s`,
    ),
    row(
      'webhook deliveries, paced p99 commit→receipt',
      figure(input.deliveries, 'pacedP99Ms'),
      'keep (< 1,000 ms)',
      (v) => v < 1000,
      (v) => `${count(v)} ms`,
    ),
  ];
}

/** The summary as a Markdown table. */
export function summaryTable(input: SummaryInput): string {
  const rows = summaryRows(input);
  return [
    '| figure (this run) | measured | target | |',
    '|---|---|---|---|',
    ...rows.map((r) => `| ${r.figure} | ${r.measured} | ${r.target} | ${r.verdict} |`),
  ].join('\n');
}
