// Prints the OpenAPI document of the app as the running service serves it (/openapi.json),
// built over an in-memory SQLite database: for generators and linters that read a file.
import { buildApp } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { createDeps } from '../src/deps.ts';

/** The app's OpenAPI document (what GET /openapi.json answers, without `servers`). */
export async function openApiDocument(): Promise<Record<string, unknown>> {
  const config = loadConfig({ DATABASE_URL: 'sqlite::memory:', LOG_LEVEL: 'silent' });
  const deps = await createDeps(config);
  const app = await buildApp(deps);
  try {
    await app.ready();
    return app.swagger() as unknown as Record<string, unknown>;
  } finally {
    await app.close();
    await deps.close();
  }
}

if (import.meta.main) process.stdout.write(JSON.stringify(await openApiDocument(), null, 2) + '\n');
