#!/usr/bin/env node
// The `billing` command (package bin). Node ≥ 24 runs the TypeScript sources directly.
const [major] = process.versions.node.split('.').map(Number);
if (major < 24) {
  process.stderr.write(
    `billing needs Node.js 24 or newer (this is ${process.version}); run it through npx or npm scripts.\n`,
  );
  process.exit(1);
}
const { runCli } = await import('../src/cli.ts');
runCli(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exitCode = code;
  },
  (error) => {
    process.stderr.write(`billing: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  },
);
