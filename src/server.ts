// Runs the service: config → deps → buildApp → listen, with graceful shutdown on SIGTERM/SIGINT.
import pino from 'pino';
import { buildApp } from './app.ts';
import type { Config } from './config.ts';
import { createDeps } from './deps.ts';
import { loggerOptions } from './http/logger.ts';
import { JOBS } from './worker/jobs.ts';
import { Worker } from './worker/runner.ts';

export interface ServeOptions {
  /** Start the background worker in this process (SPEC §1: `npm start` does). */
  worker: boolean;
}

/** Starts the HTTP API on HOST:PORT after migrating. Resolves once listening. */
export async function serve(config: Readonly<Config>, options: ServeOptions): Promise<void> {
  const deps = await createDeps(config);
  const app = await buildApp(deps);
  const worker = options.worker ? new Worker(deps, JOBS, app.log) : undefined;

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    app.log.info({ signal }, 'shutting down');
    try {
      await app.close();
      await worker?.stop();
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
  worker?.start();
}

/** Runs the background worker alone (`billing worker`) until SIGTERM/SIGINT. */
export async function runWorker(config: Readonly<Config>): Promise<void> {
  const deps = await createDeps(config);
  const log = pino(loggerOptions(config.logLevel));
  const worker = new Worker(deps, JOBS, log);
  const stop = async (signal: string) => {
    log.info({ signal }, 'worker shutting down');
    await worker.stop();
    await deps.close();
    process.exit(0);
  };
  process.once('SIGTERM', () => void stop('SIGTERM'));
  process.once('SIGINT', () => void stop('SIGINT'));
  log.info({ jobs: JOBS.map((job) => job.name) }, 'worker started');
  worker.start();
}
