// Preloaded into the app by bench/billing-run.ts (`--import`): counts every node:sqlite
// statement the process runs (prepared statements' all/get/run/iterate, and exec) and writes
// the count to BENCH_STATEMENT_COUNT_FILE when the process gets SIGUSR2 — the bench's
// "statements per renewal" on SQLite, where no wire shows them.
import { writeFileSync } from 'node:fs';
import { DatabaseSync, StatementSync } from 'node:sqlite';

let statements = 0;
// With BENCH_STATEMENT_BREAKDOWN set, per statement text since the previous signal too: the
// count, the process CPU spent in the call (ms; getrusage, so a commit's fsync wait is not in
// it) and its wall time (ms), written beside the total as `<file>.breakdown`, most CPU first.
interface Tally {
  n: number;
  cpuUs: number;
  wallNs: bigint;
}
interface Started {
  cpu: NodeJS.CpuUsage;
  wall: bigint;
}
const breakdown = process.env.BENCH_STATEMENT_BREAKDOWN ? new Map<string, Tally>() : null;
const start = (): Started => ({ cpu: process.cpuUsage(), wall: process.hrtime.bigint() });
const tally = (text: string, started: Started) => {
  const entry = breakdown!.get(text) ?? { n: 0, cpuUs: 0, wallNs: 0n };
  const cpu = process.cpuUsage(started.cpu);
  entry.n += 1;
  entry.cpuUs += cpu.user + cpu.system;
  entry.wallNs += process.hrtime.bigint() - started.wall;
  breakdown!.set(text, entry);
};
const methods = ['all', 'get', 'run', 'iterate'] as const;
for (const name of methods) {
  const original = StatementSync.prototype[name] as (...args: unknown[]) => unknown;
  Object.defineProperty(StatementSync.prototype, name, {
    value: function counted(this: StatementSync, ...args: unknown[]) {
      statements += 1;
      if (!breakdown) return original.apply(this, args);
      const started = start();
      try {
        return original.apply(this, args);
      } finally {
        tally(this.sourceSQL, started);
      }
    },
  });
}
const exec = DatabaseSync.prototype.exec;
DatabaseSync.prototype.exec = function counted(this: DatabaseSync, sql: string) {
  statements += 1;
  if (!breakdown) return exec.call(this, sql);
  const started = start();
  try {
    exec.call(this, sql);
  } finally {
    tally(sql, started);
  }
};

const file = process.env.BENCH_STATEMENT_COUNT_FILE;
if (file) {
  process.on('SIGUSR2', () => {
    writeFileSync(file, String(statements));
    if (breakdown) {
      const rows = [...breakdown].sort((a, b) => b[1].cpuUs - a[1].cpuUs);
      writeFileSync(
        `${file}.breakdown`,
        rows
          .map(
            ([text, { n, cpuUs, wallNs }]) =>
              `${n}\t${(cpuUs / 1e3).toFixed(1)}\t${(Number(wallNs) / 1e6).toFixed(1)}\t${text.replace(/\s+/g, ' ')}`,
          )
          .join('\n'),
      );
      breakdown.clear();
    }
  });
}
