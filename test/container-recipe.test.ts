// The container recipe cannot be built on these machines (no Docker), so what can be checked
// is: the Dockerfile copies files that exist and runs commands the CLI has; its healthcheck
// asks a route that needs no key; compose.yaml's environment names are variables
// src/config.ts reads, and its services are the ones the docs promise.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { COMMAND_HELP } from '../src/cli/help.ts';
import { loadConfig } from '../src/config.ts';
import { buildTestApp } from './helpers/app.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DOCKERFILE = readFileSync(new URL('../Dockerfile', import.meta.url), 'utf8');

/** The Dockerfile's instructions, continuation lines joined, comments dropped. */
function instructions(): { op: string; args: string }[] {
  const joined = DOCKERFILE.split('\n')
    .filter((line) => !line.trimStart().startsWith('#'))
    .join('\n')
    .replace(/\\\n/g, ' ');
  return joined
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean)
    .map((line) => {
      const [op, ...rest] = line.split(/\s+/);
      return { op: op!.toUpperCase(), args: rest.join(' ') };
    });
}

/** The names loadConfig looks up (every access, through a recording proxy). */
function configVariables(): Set<string> {
  const read = new Set<string>();
  loadConfig(
    new Proxy({} as Record<string, string>, {
      get(target, name) {
        if (typeof name === 'string') read.add(name);
        return Reflect.get(target, name);
      },
    }),
  );
  return read;
}

test('the Dockerfile: Node 24 slim, non-root, copies what exists, migrates then serves with commands the CLI has', () => {
  const steps = instructions();
  assert.match(steps.find((s) => s.op === 'FROM')!.args, /^node:24-slim$/);
  const user = steps.filter((s) => s.op === 'USER').at(-1);
  assert.ok(user && user.args !== 'root' && user.args !== '0', 'runs as a user, not root');
  for (const copy of steps.filter((s) => s.op === 'COPY')) {
    const sources = copy.args.split(/\s+/).slice(0, -1);
    for (const source of sources) assert.ok(existsSync(`${ROOT}/${source}`), `COPY ${source} exists`);
  }
  const cmd = JSON.parse(steps.find((s) => s.op === 'CMD')!.args) as string[];
  const commands = [...cmd.join(' ').matchAll(/node bin\/billing\.js (\S+)/g)].map((m) => m[1]!);
  assert.deepEqual(commands, ['migrate', 'serve']);
  for (const command of commands) assert.ok(Object.hasOwn(COMMAND_HELP, command), `billing ${command} exists`);
  const env = steps.filter((s) => s.op === 'ENV').flatMap((s) => [...s.args.matchAll(/([A-Z_]+)=/g)].map((m) => m[1]!));
  const known = configVariables();
  for (const name of env.filter((n) => n !== 'NODE_ENV')) assert.ok(known.has(name), `ENV ${name} is read by config`);
});

test('the Dockerfile healthcheck asks GET /api/health, which answers 200 without a key', async (t) => {
  const health = instructions().find((s) => s.op === 'HEALTHCHECK')!;
  assert.match(health.args, /\/api\/health/);
  const app = await buildTestApp(t);
  const res = await app.request('GET', '/api/health', { key: null });
  assert.equal(res.status, 200);
});

test('compose.yaml: the service, PostgreSQL and Redis; every environment name is a config variable', () => {
  const compose = parse(readFileSync(new URL('../compose.yaml', import.meta.url), 'utf8')) as {
    services: Record<string, { environment?: Record<string, string>; build?: string; image?: string }>;
  };
  assert.deepEqual(Object.keys(compose.services).sort(), ['billing', 'postgres', 'redis']);
  assert.equal(compose.services.billing!.build, '.');
  const known = configVariables();
  const names = Object.keys(compose.services.billing!.environment ?? {});
  assert.ok(names.includes('DATABASE_URL') && names.includes('REDIS_URL'));
  for (const name of names) assert.ok(known.has(name), `${name} is read by src/config.ts`);
  assert.match(compose.services.billing!.environment!.DATABASE_URL!, /^postgres:\/\/.*@postgres:5432\//);
  assert.match(compose.services.billing!.environment!.REDIS_URL!, /^redis:\/\/redis:6379/);
});
