// Preloaded into the app by bench/billing-run.ts (`--import`): counts every node:sqlite
// statement the process runs (prepared statements' all/get/run/iterate, and exec) and writes
// the count to BENCH_STATEMENT_COUNT_FILE when the process gets SIGUSR2 — the bench's
// "statements per renewal" on SQLite, where no wire shows them.
import { writeFileSync } from 'node:fs';
import { DatabaseSync, StatementSync } from 'node:sqlite';

let statements = 0;
// With BENCH_STATEMENT_BREAKDOWN set, the count per statement text since the previous signal
// too (written beside the total as `<file>.breakdown`).
const breakdown = process.env.BENCH_STATEMENT_BREAKDOWN ? new Map<string, number>() : null;
const methods = ['all', 'get', 'run', 'iterate'] as const;
for (const name of methods) {
  const original = StatementSync.prototype[name] as (...args: unknown[]) => unknown;
  Object.defineProperty(StatementSync.prototype, name, {
    value: function counted(this: StatementSync, ...args: unknown[]) {
      statements += 1;
      if (breakdown) breakdown.set(this.sourceSQL, (breakdown.get(this.sourceSQL) ?? 0) + 1);
      return original.apply(this, args);
    },
  });
}
const exec = DatabaseSync.prototype.exec;
DatabaseSync.prototype.exec = function counted(this: DatabaseSync, sql: string) {
  statements += 1;
  if (breakdown) breakdown.set(sql, (breakdown.get(sql) ?? 0) + 1);
  exec.call(this, sql);
};

const file = process.env.BENCH_STATEMENT_COUNT_FILE;
if (file) {
  process.on('SIGUSR2', () => {
    writeFileSync(file, String(statements));
    if (breakdown) {
      const rows = [...breakdown].sort((a, b) => b[1] - a[1]);
      writeFileSync(`${file}.breakdown`, rows.map(([text, n]) => `${n}\t${text.replace(/\s+/g, ' ')}`).join('\n'));
      breakdown.clear();
    }
  });
}
