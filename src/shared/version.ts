// The service version, from package.json (shown by /api/health and /openapi.json).
import { readFileSync } from 'node:fs';

const packageJson = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
  version: string;
};

export const VERSION: string = packageJson.version;
