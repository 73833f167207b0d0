// `npm start`: the HTTP API and the background worker in one process (SPEC §1).
import { runCli } from './cli.ts';

runCli(['serve']).then(
  (code) => {
    if (code >= 0) process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`billing: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  },
);
