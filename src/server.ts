// Runs the service: config → deps → buildApp → listen, with graceful shutdown on SIGTERM/SIGINT.
import { buildApp } from './app.ts';
import type { Config } from './config.ts';
import { createDeps } from './deps.ts';

export interface ServeOptions {
  /** Start the background worker in this process (SPEC §1: `npm start` does). */
  worker: boolean;
}

/** Starts the HTTP API on HOST:PORT after migrating. Resolves once listening. */
export async function serve(config: Readonly<Config>, options: ServeOptions): Promise<void> {
  const deps = await createDeps(config);
  const app = await buildApp(deps);
  // The background worker joins here once it exists (subscriptions issue); until then
  // there is no time-based work to run.
  void options.worker;

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    app.log.info({ signal }, 'shutting down');
    try {
      await app.close();
      await deps.close();
      process.exit(0);
    } catch (error) {
      app.log.error({ err: error }, 'shutdown failed');
      process.exit(1);
    }
  };
  process.once('SIGTERM', () => void stop('SIGTERM'));
  process.once('SIGINT', () => void stop('SIGINT'));

  await app.listen({ port: config.port, host: config.host });
}
