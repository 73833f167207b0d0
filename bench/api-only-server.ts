// The API without its worker (`billing serve --no-worker`), as a bench child: the usage bench
// (usage.ts) moves its own clock for renewals, so no worker may renew with the real one.
import { runCli } from '../src/cli.ts';

await runCli(['serve', '--no-worker']);
